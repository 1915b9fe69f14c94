/**
 * E-check routes: create and get.
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
  param,
  readJson,
  RequestIdHeader,
  requestIdOf,
  z,
} from "./_endpoint.ts";

/** E-check endpoints. */
export const echeckEndpoints: Endpoint[] = [
  {
    route: createRoute({
      method: "post",
      path: "/payments/echecks",
      operationId: "createECheck",
      tags: ["E-checks"],
      summary: "Create an e-check (fields in lower camelCase or capitalised)",
      request: { headers: RequestIdHeader, body: jsonBody(S.ECheckInput, "E-check") },
      responses: { 201: jsonResponse(S.ECheck, "E-check created (PENDING)"), ...ERROR_RESPONSES },
    }),
    handle: async (h) => h.svc.createECheck(await readJson(h), requestIdOf(h.c)),
  },
  {
    route: createRoute({
      method: "get",
      path: "/payments/echecks/{echeckId}",
      operationId: "getECheck",
      tags: ["E-checks"],
      summary: "Read an e-check",
      request: { params: z.object({ echeckId: z.string() }) },
      responses: { 200: jsonResponse(S.ECheck, "E-check"), ...ERROR_RESPONSES },
    }),
    handle: (h) => h.svc.getECheck(param(h, "echeckId")),
  },
];
