/**
 * The public one-time token route.
 *
 * @module
 */
import * as S from "../../shared/payments_schemas.ts";
import {
  createRoute,
  type Endpoint,
  ERROR_RESPONSES,
  jsonBody,
  jsonResponse,
  readJson,
  RequestIdHeader,
  requestIdOf,
} from "./_endpoint.ts";

/** Token endpoints (no auth). */
export const tokenEndpoints: Endpoint[] = [
  {
    public: true,
    rateLimited: true,
    route: createRoute({
      method: "post",
      path: "/payments/tokens",
      operationId: "createToken",
      tags: ["Tokens"],
      summary: "Exchange a card or bank account for a one-time token (15 minutes, no auth)",
      description: "Send the token's `value` as the `token` of one charge (card) or e-check " +
        "(bank account). No bearer token needed, so the endpoint is rate limited per client " +
        "address (default 60 a minute, 30 at once): past it 429 PMT-4029 with `Retry-After`.",
      request: { headers: RequestIdHeader, body: jsonBody(S.TokenInput, "Card or bank account") },
      responses: {
        201: jsonResponse(S.Token, "Token"),
        400: ERROR_RESPONSES[400],
        429: {
          ...jsonResponse(S.ErrorEnvelope, "Rate limit of the client address reached (PMT-4029)"),
          headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds" } },
        },
      },
    }),
    handle: async (h) => h.svc.createToken(await readJson(h), requestIdOf(h.c)),
  },
];
