/**
 * The admin API's audit log (`admin.audit_log`): one JSON line for every
 * mutating call and every refused one, written as it happens (a line per
 * call, synchronously: admin calls are few, and a line must not be lost to
 * a drain that follows it), to a file opened for append, created 0600.
 *
 * A line holds when, who (the role and the token's id, never the token),
 * from where (the peer's address), what (`action` and its `target`) and
 * how it ended (`result`, `status`):
 *
 * ```json
 * {"time":"2026-11-24T10:40:00.000Z","role":"operator","token_id":"ops.token","source":"10.0.0.7","action":"backend.disable","target":"api-1","result":"allowed","status":200}
 * ```
 *
 * A line that cannot be written is logged (once per 10 s with the count)
 * and dropped: the admin API keeps serving.
 *
 * @example
 * ```ts
 * const audit = AuditLog.open("/var/log/spooky/audit.jsonl");
 * audit.write({ role: "admin", token_id: "admin.token", source: "127.0.0.1", action: "reload", target: null, result: "allowed", status: 200 });
 * audit.close();
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";

const log = getLogger(["proxy", "admin"]);
const ENCODER = new TextEncoder();
/** Least time between two warnings about lines not written. */
const WARN_EVERY_MS = 10_000;

/** One audited call, without its time (the log adds it). */
export interface AuditEntry {
  /** The caller's role; `null` when it had none (refused before or at authentication). */
  role: string | null;
  /** The id of the caller's token (a file name, `admin.token`); `null` without one. Never the token. */
  token_id: string | null;
  /** The TCP peer's address. */
  source: string;
  /** What was asked: `backend.enable`, `backend.disable`, `backend.weight`, `drain`, `reload`, `read`, … */
  action: string;
  /** What it was asked of (a backend id), or `null`. */
  target: string | null;
  /** `allowed`, or why it was refused: `address_refused`, `unauthenticated`, `forbidden`. */
  result: string;
  /** The HTTP status answered. */
  status: number;
}

/** Where audit lines go. */
export interface AuditSink {
  /** Writes one entry's line. */
  write(entry: AuditEntry): void;
}

/** The audit log file. */
export class AuditLog implements AuditSink {
  readonly #file: { writeSync(p: Uint8Array): number; close(): void };
  readonly #path: string;
  readonly #now: () => number;
  #dropped = 0;
  #warnedAt = -Infinity;

  /** An audit log writing to `file` (already open); `now` stamps lines. */
  constructor(
    file: { writeSync(p: Uint8Array): number; close(): void },
    path: string,
    now = Date.now,
  ) {
    this.#file = file;
    this.#path = path;
    this.#now = now;
  }

  /** Opens `path` for append (created 0600); throws when it cannot be. */
  static open(path: string): AuditLog {
    return new AuditLog(Deno.openSync(path, { append: true, create: true, mode: 0o600 }), path);
  }

  /** Writes one line, stamped now. */
  write(entry: AuditEntry): void {
    const line = JSON.stringify({ time: new Date(this.#now()).toISOString(), ...entry }) + "\n";
    try {
      const bytes = ENCODER.encode(line);
      let off = 0;
      while (off < bytes.length) off += this.#file.writeSync(bytes.subarray(off));
    } catch (err) {
      this.#dropped++;
      const now = this.#now();
      if (now - this.#warnedAt < WARN_EVERY_MS) return;
      this.#warnedAt = now;
      log.error("admin audit log {path}: {count} line(s) not written: {error}", {
        path: this.#path,
        count: this.#dropped,
        error: (err as Error).message,
      });
      this.#dropped = 0;
    }
  }

  /** Closes the file. */
  close(): void {
    try {
      this.#file.close();
    } catch {
      // already closed
    }
  }
}
