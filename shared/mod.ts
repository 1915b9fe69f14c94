/**
 * Pieces used by both the proxy and the payments API: logging setup, byte
 * helpers, deadlines, the bearer-token check, constant-time comparison, statistics for the
 * benchmarks, the product version, and the development certificates
 * (`certs/`). The payments wire schemas (`payments_schemas.ts`) and their
 * types spelt out (`payments_wire.ts`, re-exported by the payments packages
 * whose signatures name them) are imported directly by the payments API and
 * its clients. `serve_connections.ts` is the TCP server with connection
 * limits that the payments API and the proxy's TCP listeners share.
 *
 * @example
 * ```ts
 * import { settledWithin, setupLogging, VERSION } from "./mod.ts";
 *
 * declare const server: { finished: Promise<void> };
 *
 * await setupLogging({ service: "spooky", level: "ghost" });
 * const drained = await settledWithin(server.finished, 10_000);
 * ```
 *
 * @module
 */

export { bearerChecker, bearerToken } from "./bearer.ts";
export { concatBytes, readUpTo, writeAll } from "./bytes.ts";
export { constantTimeEqual } from "./constant_time.ts";
export { deadline, type IdleWatch, idleWatch, settledWithin } from "./deadline.ts";
export {
  DEFAULT_LOG_FILE,
  formatLine,
  LEVEL_NAMES,
  type LevelOrOff,
  LogConfigError,
  type LoggingOptions,
  type LogLevel,
  type LogLine,
  lookupLevel,
  parseLevel,
  parseRustLog,
  redactedFormatLine,
  REDACTION_PATTERNS,
  resolveLogFilePath,
  type RustLogSpec,
  setupLogging,
  teardownLogging,
} from "./logging.ts";
export type { RedactionPattern } from "@logtape/redaction";
export { median, quantile } from "./stats.ts";
export { PRODUCT, USER_AGENT, VERSION } from "./version.ts";
export * as certs from "./certs/mod.ts";
