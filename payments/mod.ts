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
  type PaymentsDeps,
} from "./app.ts";
export { INTUIT_TID, type PaymentsEnv } from "./middleware.ts";
export { rateLimitAddress, type TrustedPeers, trustedPeers } from "./client_address.ts";
export {
  createPaymentsService,
  generateToken,
  KV_CONNECT_MAX_CHECKS,
  type PaymentsServer,
  type PaymentsServerOptions,
  type PaymentsServiceOptions,
  startPaymentsServer,
} from "./server.ts";
export { PaymentsService, type ServiceDeps } from "./service.ts";
export { type ChangeOptions, type CommitPlan, PaymentsStore, type Reply } from "./store/mod.ts";
export type { ErrorEnvelope, ErrorItem } from "../shared/payments_wire.ts";
export { PaymentsError } from "./domain/errors.ts";
export type { ErrorDetail, PaymentsErrorKind } from "./domain/errors.ts";
export type { IdGenerator } from "./domain/ids.ts";
export type { RateLimitOptions } from "./rate_limit.ts";
export type { ConnectionLimits } from "../shared/serve_connections.ts";
