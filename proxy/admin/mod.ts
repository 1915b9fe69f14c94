/**
 * The admin listener's application: `/health`, `/metrics` and the admin API
 * under `/admin/` (backends, weights, reload, drain), served over HTTP/1.1
 * and h2c on a loopback address by default.
 *
 * @example
 * ```ts
 * import { type AdminDeps, createAdminApp } from "./mod.ts";
 *
 * declare const runtime: AdminDeps["runtime"];
 * declare const connections: AdminDeps["connections"];
 * declare const reload: AdminDeps["reload"];
 * declare const drain: AdminDeps["drain"];
 * const app = createAdminApp({ runtime, connections, reload, drain, version: "1.0.0" });
 * Deno.serve({ hostname: "127.0.0.1", port: 9890 }, app.fetch);
 * ```
 *
 * @module
 */

export { type AdminDeps, type AdminRuntime, createAdminApp, type ReloadOutcome } from "./admin.ts";
export { serialRuns } from "./serial.ts";
export {
  action,
  type AdminAccess,
  adminAccessFollowing,
  adminAccessOf,
  AdminCounts,
  type AdminResult,
} from "./access.ts";
export { type AuditEntry, AuditLog, type AuditSink } from "./audit.ts";
export {
  type AdminToken,
  type AdminTokenParse,
  AdminTokenSet,
  MIN_ADMIN_TOKEN_LENGTH,
  parseAdminToken,
  requiredRole,
  roleAllows,
  tokenDigest,
} from "./roles.ts";
export {
  poolsReadiness,
  ProxyLifecycle,
  type Readiness,
  readiness,
  readyResponse,
  type ReadyRuntime,
} from "./ready.ts";
// Types of other packages that the signatures above use: the runtime's and the server's.
export type * from "../mod.ts";
export type { ConnectionInfo } from "../server/mod.ts";
