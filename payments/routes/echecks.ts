/**
 * E-check routes: create, get, refund (create, get).
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

const ECheckId = z.object({ echeckId: z.string() });

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
  {
    route: createRoute({
      method: "post",
      path: "/payments/echecks/{echeckId}/refunds",
      operationId: "createECheckRefund",
      tags: ["E-checks"],
      summary: "Refund an e-check (total ≤ its amount; without `amount`, the rest)",
      description: "Any number of refunds (at most 100) up to the e-check's amount; it then " +
        "reads `REFUNDED` once nothing is left (`refundableAmount` tells what is).",
      request: {
        params: ECheckId,
        headers: RequestIdHeader,
        body: jsonBody(S.AdjustInput, "Refund"),
      },
      responses: { 201: jsonResponse(S.Refund, "Refund issued"), ...ERROR_RESPONSES },
    }),
    handle: async (h) =>
      h.svc.refundECheck(param(h, "echeckId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: createRoute({
      method: "get",
      path: "/payments/echecks/{echeckId}/refunds/{refundId}",
      operationId: "getECheckRefund",
      tags: ["E-checks"],
      summary: "Read a refund of an e-check",
      request: { params: z.object({ echeckId: z.string(), refundId: z.string() }) },
      responses: { 200: jsonResponse(S.Refund, "Refund"), ...ERROR_RESPONSES },
    }),
    handle: (h) => h.svc.getECheckRefund(param(h, "echeckId"), param(h, "refundId")),
  },
];
