/**
 * Phase 6, downstream response: what the client is sent (pingora's
 * `response_filter`): the backend's head checked (a head no client may be
 * given is a 502), its fields filtered for the client
 * (`upstream/headers.ts`), and the proxy's own answers (a refusal, a
 * failed forward) described for the request sink: the `backend` it
 * counts against and the `failure` (`upstream/outcome.ts`). The server
 * layer writes the response (`server/request_stream.ts`,
 * `server/tcp_fallback.ts`) and the request sink logs and counts it
 * (`request_log.ts`).
 *
 * @example
 * ```ts
 * import type { UpstreamResponse } from "../upstream/transport.ts";
 * declare const res: UpstreamResponse;
 *
 * const invalid = invalidResponse(res); // null, or why it may not be forwarded
 * if (invalid === null) downstreamResponse("b1", res, 12.5).backend; // "b1"
 * ```
 *
 * @module
 */

import { validateResponseHead } from "../http/mod.ts";
import { errorResponse } from "../server/error_response.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import { downstreamResponseFields } from "../upstream/headers.ts";
import { OUTCOMES, type UpstreamOutcome } from "../upstream/outcome.ts";
import type { UpstreamResponse } from "../upstream/transport.ts";
import type { Refusal } from "./admit.ts";
import { applyHeaderRules, type HeaderRules } from "./header_rules.ts";

/**
 * The proxy's own answer to a request it will not forward; the client's
 * body, if any, is not wanted. Counted and logged once finished, by the
 * request sink.
 */
export function refuse(req: IncomingRequest, refusal: Refusal): OutgoingResponse {
  req.body?.cancel().catch(() => {});
  return errorResponse(refusal.status, refusal.error, refusal.message);
}

/**
 * Checks the backend's response head with the one definition of a valid
 * head (`http/response.ts`: RFC 9113 §8.2, §8.3, RFC 9110 §15), whichever
 * client carried it; returns why it may not be forwarded, or `null`.
 */
export function invalidResponse(res: UpstreamResponse): string | null {
  const checked = validateResponseHead(res.status, res.headers);
  return typeof checked === "string" ? checked : null;
}

/**
 * The backend's answer as the client gets it; `upstreamMs`: from sending to
 * its head. The pool's `headers.response` rules (`rules`, `null` for none)
 * apply to the backend's answers only, after the proxy's own changes
 * (`via` included), never to the proxy's own error responses.
 */
export function downstreamResponse(
  backendId: string,
  res: UpstreamResponse,
  upstreamMs: number,
  rules: HeaderRules | null = null,
): OutgoingResponse {
  const fields = downstreamResponseFields(res.headers);
  return {
    status: res.status,
    headers: rules === null ? fields : applyHeaderRules(fields, rules),
    body: res.body,
    // Known once the body has ended (a streamed body's are set by then).
    trailers: res.body === null ? undefined : () => res.trailers,
    backend: backendId,
    upstreamMs,
  };
}

/** The proxy's answer for a forward that ended in `outcome`, described for the request sink. */
export function failureResponse(
  outcome: UpstreamOutcome,
  backendId: string,
  message: string,
): OutgoingResponse {
  const rule = OUTCOMES[outcome];
  const res: OutgoingResponse = errorResponse(rule.status!, rule.error, message);
  if (rule.namesBackend) res.backend = backendId;
  if (rule.failure !== undefined) res.failure = rule.failure;
  return res;
}
