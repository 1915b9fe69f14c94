/**
 * The one sink every finished request goes through, whichever listener
 * carried it (HTTP/3, or the TCP fallback's HTTP/2 and HTTP/1.1) and whoever
 * answered it (a backend, the proxy's routing, or the server layer's own
 * 400, 408, 413, 431 and 500): it counts the request in the metrics and
 * writes its access-log line, so the two always agree. It plays the part of
 * pingora's `logging` phase: the last step of every request, run exactly
 * once.
 *
 * Forwarding and routing only describe what happened (the response's
 * `backend` and `failure`); nothing else counts requests.
 *
 * @example
 * ```ts
 * import type { AccessLog } from "./access_log.ts";
 * import type { ProxyRuntime } from "./runtime.ts";
 * declare const runtime: ProxyRuntime;
 * declare const access: AccessLog;
 * declare const reopened: AccessLog;
 *
 * const sink = createRequestSink(runtime.metrics, access);
 * // H3Server hooks: { requestDone: sink.finished }; the TCP fallback: { done: sink.finished }
 * sink.setAccessLog(reopened); // on reload
 * sink.close();
 * ```
 *
 * @module
 */

import type { AccessLog } from "./access_log.ts";
import type { ProxyMetrics } from "./metrics/metrics.ts";
import type { RequestRecord } from "./server/types.ts";

/** Status counted and logged for a client that left before it could be answered. */
export const CLIENT_GONE_STATUS = 499;

/** The finished-request sink. */
export interface RequestSink {
  /** Accounts for one finished request: counted once, logged once. */
  finished(record: RequestRecord): void;
  /** Replaces the access log (`undefined`: off); the old one is flushed and closed. */
  setAccessLog(access: AccessLog | undefined): void;
  /** Flushes and closes the access log. */
  close(): void;
}

/**
 * The status a record is counted and logged with: what was sent, except 499
 * for a client that left while the backend was being asked (the proxy's
 * answer then reached no one).
 */
export function accountedStatus(record: RequestRecord): number {
  return record.failure === "client_gone" ? CLIENT_GONE_STATUS : record.status;
}

/** Creates the sink feeding `metrics` and (when on) an access log. */
export function createRequestSink(metrics: ProxyMetrics, access?: AccessLog): RequestSink {
  let log = access;
  return {
    finished(record) {
      const status = accountedStatus(record);
      const cause = record.failure === "timeout" || record.failure === "error"
        ? record.failure
        : undefined;
      metrics.record(record.backend ?? null, status, cause);
      if (log !== undefined) {
        log.log(status === record.status ? record : { ...record, status });
      }
    },
    setAccessLog(next) {
      if (next === log) return;
      log?.close();
      log = next;
    },
    close() {
      log?.close();
    },
  };
}
