/**
 * The proxy's own answers: small JSON bodies `{"error": "...", "message": "..."}`
 * with the statuses of docs/architecture.md §5 (400, 404, 408, 413, 431, 500, 501, 502, 503).
 *
 * @example
 * ```ts
 * import { errorResponse } from "./error_response.ts";
 * const res = errorResponse(404, "not_found", "no route matches this request");
 * ```
 *
 * @module
 */

import type { OutgoingResponse } from "./types.ts";

const ENCODER = new TextEncoder();

/** A small JSON error response with its `content-length`. */
export function errorResponse(status: number, error: string, message: string): OutgoingResponse {
  const body = ENCODER.encode(JSON.stringify({ error, message }));
  return {
    status,
    headers: [["content-type", "application/json"], ["content-length", String(body.length)]],
    body,
    error,
  };
}
