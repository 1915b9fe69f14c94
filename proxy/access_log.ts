/**
 * The access log: one line per finished request, like Caddy's and Envoy's,
 * with time, client address, method, authority, path (secrets redacted by
 * the shared redaction rules), status, response bytes, duration, time to the
 * backend's response head, backend id, the rate limit that refused it (`limit=`, a 429 of
 * `rate_limits`) and HTTP/3 stream id (`listener=tcp` for the TCP fallback).
 *
 * It is written on the request path, so it is built to cost little: lines
 * are formatted by hand (no LogTape record), paths are redacted once and
 * remembered (most traffic repeats a few paths), the timestamp is formatted
 * once per second, and lines are written in batches, one write every
 * {@link FLUSH_MS} ms or every {@link FLUSH_BYTES} bytes.
 *
 * Text lines look like the rest of the log:
 *
 * ```text
 * [2026-11-24 10:40:00] [INFO] [proxy::access] 192.0.2.7:51234 "GET example.com /api/x?q=[REDACTED]" 200 1234 12.3ms upstream=10.1ms backend=api-1 stream=8
 * ```
 *
 * @example
 * ```ts
 * const access = createAccessLog({ format: "text", write: (s) => Deno.stderr.writeSync(new TextEncoder().encode(s)) });
 * // fed by the request sink: createRequestSink(metrics, access)
 * access.close();
 * ```
 *
 * @module
 */

import { redactText } from "../shared/logging.ts";
import type { RequestRecord } from "./server/types.ts";

/** Batched lines are written at least this often (ms). */
export const FLUSH_MS = 50;
/** A batch this large is written at once (bytes, roughly). */
export const FLUSH_BYTES = 64 * 1024;
/** Redacted paths remembered. */
const PATH_CACHE_SIZE = 2048;

/** Options of {@link createAccessLog}. */
export interface AccessLogOptions {
  /** `text` or `json` lines. */
  format: "text" | "json";
  /** Writes a batch of whole lines (each ending in `\n`). */
  write(text: string): void;
  /** Wall clock in ms; default `Date.now`. */
  now?: () => number;
  /** Called once by `close`, after the last write (e.g. closes the file). */
  onClose?: () => void;
}

/** A running access log. */
export interface AccessLog {
  /** Writes one finished request's line (called by the request sink, `request_log.ts`). */
  log(record: RequestRecord): void;
  /** Writes what is batched. */
  flush(): void;
  /** Writes what is batched, stops the flush timer and releases the destination. */
  close(): void;
}

/** Creates an access log writing through `write`. */
export function createAccessLog(opts: AccessLogOptions): AccessLog {
  const now = opts.now ?? Date.now;
  const paths = new Map<string, string>();
  let batch: string[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let second = -1;
  let stamp = "";
  let iso = "";
  let closed = false;

  const redactPath = (path: string): string => {
    let r = paths.get(path);
    if (r === undefined) {
      r = redactText(path);
      if (paths.size >= PATH_CACHE_SIZE) paths.clear();
      paths.set(path, r);
    }
    return r;
  };
  const time = (ms: number) => {
    const s = Math.floor(ms / 1000);
    if (s !== second) {
      second = s;
      const d = new Date(s * 1000);
      // UTC, like every other log line (shared/logging.ts).
      iso = d.toISOString().slice(0, 19);
      stamp = iso.replace("T", " ");
    }
  };
  const flush = () => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (batch.length === 0) return;
    const text = batch.join("");
    batch = [];
    size = 0;
    try {
      opts.write(text);
    } catch {
      // a broken log destination must not break requests
    }
  };
  const text = (r: RequestRecord): string => {
    let line =
      `[${stamp}] [INFO] [proxy::access] ${r.remote.hostname}:${r.remote.port} "${r.method} ${
        r.authority ?? "-"
      } ${redactPath(r.path)}" ${r.status} ${r.bytes} ${r.durationMs.toFixed(1)}ms`;
    if (r.upstreamMs !== undefined) line += ` upstream=${r.upstreamMs.toFixed(1)}ms`;
    if (r.backend !== undefined) line += ` backend=${r.backend}`;
    if (r.rateLimit !== undefined) line += ` limit=${r.rateLimit}`;
    line += r.listener === "tcp" ? " listener=tcp" : ` stream=${r.streamId}`;
    if (r.outcome !== "complete") line += ` outcome=${r.outcome}`;
    return line + "\n";
  };
  const json = (r: RequestRecord, ms: number): string =>
    JSON.stringify({
      time: `${iso}.${String(ms % 1000).padStart(3, "0")}Z`,
      level: "info",
      logger: "proxy.access",
      client: `${r.remote.hostname}:${r.remote.port}`,
      method: r.method,
      authority: r.authority ?? null,
      path: redactPath(r.path),
      status: r.status,
      bytes: r.bytes,
      duration_ms: Math.round(r.durationMs * 10) / 10,
      upstream_ms: r.upstreamMs === undefined ? null : Math.round(r.upstreamMs * 10) / 10,
      backend: r.backend ?? null,
      listener: r.listener,
      stream_id: r.streamId,
      outcome: r.outcome,
      rate_limit: r.rateLimit ?? null,
    }) + "\n";

  return {
    log(record) {
      const ms = now();
      time(ms);
      const line = opts.format === "json" ? json(record, ms) : text(record);
      batch.push(line);
      size += line.length;
      if (size >= FLUSH_BYTES) flush();
      else timer ??= setTimeout(flush, FLUSH_MS);
    },
    flush,
    close() {
      if (closed) return;
      closed = true;
      flush();
      opts.onClose?.();
    },
  };
}
