/**
 * E-check routes: create, get, refund (create, get).
 *
 * @module
 */
import * as S from "../../shared/payments_schemas.ts";
import { type Endpoint, param, readJson, requestIdOf, routeOf, z } from "./_endpoint.ts";

const ECheckId = z.object({ echeckId: z.string() });
const ECheckRefund = z.object({ echeckId: z.string(), refundId: z.string() });
const tag = "E-checks";

/** E-check endpoints. */
export const echeckEndpoints: Endpoint[] = [
  {
    route: routeOf({
      method: "post",
      path: "/payments/echecks",
      operationId: "createECheck",
      tag,
      summary: "Create an e-check (fields in lower camelCase or capitalised)",
      body: [S.ECheckInput, "E-check"],
      ok: [201, S.ECheck, "E-check created (PENDING)"],
    }),
    handle: async (h) => h.svc.createECheck(await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "get",
      path: "/payments/echecks/{echeckId}",
      operationId: "getECheck",
      tag,
      summary: "Read an e-check",
      params: ECheckId,
      ok: [200, S.ECheck, "E-check"],
    }),
    handle: (h) => h.svc.getECheck(param(h, "echeckId")),
  },
  {
    route: routeOf({
      method: "post",
      path: "/payments/echecks/{echeckId}/refunds",
      operationId: "createECheckRefund",
      tag,
      summary: "Refund an e-check (total ≤ its amount; without `amount`, the rest)",
      description: "Any number of refunds (at most 100) up to the e-check's amount; it then " +
        "reads `REFUNDED` once nothing is left (`refundableAmount` tells what is).",
      params: ECheckId,
      body: [S.AdjustInput, "Refund"],
      ok: [201, S.Refund, "Refund issued"],
    }),
    handle: async (h) =>
      h.svc.refundECheck(param(h, "echeckId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "get",
      path: "/payments/echecks/{echeckId}/refunds/{refundId}",
      operationId: "getECheckRefund",
      tag,
      summary: "Read a refund of an e-check",
      params: ECheckRefund,
      ok: [200, S.Refund, "Refund"],
    }),
    handle: (h) => h.svc.getECheckRefund(param(h, "echeckId"), param(h, "refundId")),
  },
];
