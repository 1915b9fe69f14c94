/**
 * Public surface of the payments sandbox.
 *
 * @example
 * ```ts
 * import { startPaymentsServer } from "./mod.ts";
 *
 * const srv = await startPaymentsServer({ port: 0, kv: await Deno.openKv(":memory:") });
 * // srv.url, srv.token
 * await srv.shutdown();
 * ```
 *
 * @module
 */
export {
  basePathsOf,
  buildOpenApiDocument,
  createApp,
  DEFAULT_BASE_PATH,
  DEFAULT_BASE_PATHS,
  DEFAULT_CORS_ORIGINS,
  INTUIT_TID,
  type PaymentsDeps,
} from "./app.ts";
export { rateLimitAddress, type TrustedPeers, trustedPeers } from "./client_address.ts";
export {
  generateToken,
  type PaymentsServer,
  type PaymentsServerOptions,
  startPaymentsServer,
} from "./server.ts";
export { PaymentsError } from "./domain/errors.ts";
export type { ErrorDetail, PaymentsErrorKind } from "./domain/errors.ts";
export type { IdGenerator } from "./domain/ids.ts";
export type { RateLimitOptions } from "./rate_limit.ts";
export type { ConnectionLimits } from "../shared/serve_connections.ts";
