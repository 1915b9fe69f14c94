/**
 * Idempotency records: the response of a write, stored under its
 * `Request-Id` in the write's own commit, and replayed for a repeat of the
 * identical request. A record names the operation (`op`: its name and path
 * identifiers) and a digest of the request body, so that the same
 * Request-Id on another operation, another resource or with another body is
 * refused (400 `requestId is invalid.`) instead of answered with a response
 * to a different request.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { PaymentsError } from "../domain/errors.ts";
import type { Reply } from "./reply.ts";

/** How long idempotency records are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A stored response, replayed for a repeated Request-Id. */
export interface IdempotencyRecord extends Omit<Reply, "replayed" | "body"> {
  /** Operation fingerprint (name plus path identifiers). */
  op: string;
  /**
   * Digest of the request body ({@link requestDigest}); absent in records
   * written by earlier versions, which then replay whatever the body.
   */
  digest?: string;
  /** The original response body (records written before `json`). */
  body?: unknown;
}

/** JSON text of `value` with the keys of every object sorted (same data, same text). */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i ? "," : "") + canonicalJson(value[i]);
    return out + "]";
  }
  const obj = value as Record<string, unknown>;
  let out = "{";
  for (const k of Object.keys(obj).sort()) {
    if (obj[k] === undefined) continue;
    out += (out.length > 1 ? "," : "") + JSON.stringify(k) + ":" + canonicalJson(obj[k]);
  }
  return out + "}";
}

/**
 * Digest of a request body as parsed JSON: base64 SHA-256 of its canonical
 * JSON text, so that key order and white space do not matter and any other
 * value does. An absent body digests as `{}`.
 *
 * @example
 * ```ts
 * requestDigest({ a: 1, b: 2 }) === requestDigest({ b: 2, a: 1 }); // true
 * ```
 */
export function requestDigest(body: unknown): string {
  const text = canonicalJson(body === undefined || body === null ? {} : body);
  return createHash("sha256").update(text, "utf8").digest("base64");
}

/**
 * The reply a stored record gives a request with this `op` and body
 * `digest`: its original response, marked replayed; 400
 * `requestId is invalid.` (the rule in `moreInfo`) when the record is of
 * another operation or another body.
 */
export function replayOf(record: IdempotencyRecord, op: string, digest?: string): Reply {
  if (record.op !== op) {
    throw PaymentsError.invalid(
      "requestId",
      undefined,
      "a Request-Id identifies one request: it was first used for another operation or resource",
    );
  }
  if (record.digest !== undefined && digest !== undefined && record.digest !== digest) {
    throw PaymentsError.invalid(
      "requestId",
      undefined,
      "a Request-Id replays only the identical request: it was first used with a different body",
    );
  }
  const body = record.json === undefined ? record.body : JSON.parse(record.json);
  return {
    status: record.status,
    body,
    ...(record.json !== undefined ? { json: record.json } : {}),
    ...(record.headers ? { headers: record.headers } : {}),
    replayed: true,
  };
}
