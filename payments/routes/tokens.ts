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
    route: createRoute({
      method: "post",
      path: "/payments/tokens",
      operationId: "createToken",
      tags: ["Tokens"],
      summary: "Exchange a card or bank account for a one-time token (15 minutes, no auth)",
      request: { headers: RequestIdHeader, body: jsonBody(S.TokenInput, "Card or bank account") },
      responses: { 201: jsonResponse(S.Token, "Token"), 400: ERROR_RESPONSES[400] },
    }),
    handle: async ({ c, svc }) => svc.createToken(await readJson(c), requestIdOf(c)),
  },
];
