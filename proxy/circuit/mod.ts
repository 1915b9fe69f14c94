/**
 * Circuit breaking (Envoy's sense): per backend `max_inflight`, per pool
 * `max_pending`, past them 503 `overloaded`; and the pool's load (in
 * flight, response times) the load-aware balancers read, fed from every
 * attempt's end.
 *
 * @example
 * ```ts
 * import { PoolGate } from "./mod.ts";
 * const gate = new PoolGate();
 * gate.configure([{ id: "b1", max_inflight: 2 }], 0);
 * ```
 *
 * @module
 */

export { type AttemptGate, OVERLOAD_LIMITS, type OverloadLimit, PoolGate } from "./gate.ts";
export { PendingQueue } from "./pending.ts";
export type { UpstreamOutcome } from "../upstream/outcome.ts";
// What the gate's signatures name, so that this package's page is complete on its own.
export {
  type AttemptObserver,
  type AttemptResult,
  BackendLoad,
  type BackendRef,
  type BackendTlsSetting,
  type ClientCertificate,
  type LoadReader,
  LoadTable,
} from "../balancer/mod.ts";
