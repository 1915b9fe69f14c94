/**
 * Charge routes: create, get, capture, refund (create, get) and void.
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
  routeOf,
  z,
} from "./_endpoint.ts";

const ChargeId = z.object({ chargeId: z.string() });
const ChargeRefund = z.object({ chargeId: z.string(), refundId: z.string() });
const ChargeRequest = z.object({ chargeRequestId: z.string() });
const tag = "Charges";

/** Charge endpoints. */
export const chargeEndpoints: Endpoint[] = [
  {
    route: createRoute({
      method: "post",
      path: "/payments/charges",
      operationId: "createCharge",
      tags: [tag],
      summary: "Create a card charge (capture defaults to false)",
      description:
        "Send `card` or a one-time token's `value` as `token`. The `Request-Id` of this request " +
        "(generated and returned in the `Request-Id` header when absent) addresses the void.",
      request: { headers: RequestIdHeader, body: jsonBody(S.ChargeInput, "Charge") },
      responses: {
        201: jsonResponse(S.Charge, "Charge created (status AUTHORIZED, CAPTURED or DECLINED)"),
        ...ERROR_RESPONSES,
        502: jsonResponse(S.ErrorEnvelope, "System error (PMT-6000)"),
      },
    }),
    handle: async (h) => h.svc.createCharge(await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "get",
      path: "/payments/charges/{chargeId}",
      operationId: "getCharge",
      tag,
      summary: "Read a charge (with its refunds and the refundable remainder)",
      params: ChargeId,
      ok: [200, S.Charge, "Charge"],
    }),
    handle: (h) => h.svc.getCharge(param(h, "chargeId")),
  },
  {
    route: routeOf({
      method: "post",
      path: "/payments/charges/{chargeId}/capture",
      operationId: "captureCharge",
      tag,
      summary: "Capture an authorized charge (once, amount ≤ authorized)",
      params: ChargeId,
      body: [S.AdjustInput, "Capture"],
      ok: [200, S.Charge, "Charge with captureDetail"],
    }),
    handle: async (h) => h.svc.capture(param(h, "chargeId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "post",
      path: "/payments/charges/{chargeId}/refunds",
      operationId: "createRefund",
      tag,
      summary: "Refund a charge (total ≤ captured; an authorization only in full)",
      description: "Any number of refunds (at most 100) up to the captured amount; the charge " +
        "then reads `REFUNDED`, partly or fully refunded alike: its `refunds` and " +
        "`refundableAmount` tell how much. Without `amount`, the whole remainder.",
      params: ChargeId,
      body: [S.AdjustInput, "Refund"],
      ok: [201, S.Refund, "Refund issued"],
    }),
    handle: async (h) => h.svc.refund(param(h, "chargeId"), await readJson(h), requestIdOf(h.c)),
  },
  {
    route: routeOf({
      method: "get",
      path: "/payments/charges/{chargeId}/refunds",
      operationId: "listRefunds",
      tag,
      summary: "List a charge's refunds, newest first",
      params: ChargeId,
      ok: [200, S.RefundList, "Refunds"],
    }),
    handle: (h) => h.svc.listRefunds(param(h, "chargeId")),
  },
  {
    route: routeOf({
      method: "get",
      path: "/payments/charges/{chargeId}/refunds/{refundId}",
      operationId: "getRefund",
      tag,
      summary: "Read a refund",
      params: ChargeRefund,
      ok: [200, S.Refund, "Refund"],
    }),
    handle: (h) => h.svc.getRefund(param(h, "chargeId"), param(h, "refundId")),
  },
  {
    route: createRoute({
      method: "post",
      path: "/payments/txn-requests/{chargeRequestId}/void",
      operationId: "voidCharge",
      tags: [tag],
      summary: "Void a charge by the Request-Id of its create request",
      request: {
        params: ChargeRequest,
        headers: RequestIdHeader,
        body: { ...jsonBody(S.VoidInput, "Optional void details"), required: false },
      },
      responses: { 201: jsonResponse(S.Void, "Void issued"), ...ERROR_RESPONSES },
    }),
    handle: async (h) =>
      h.svc.voidByRequest(param(h, "chargeRequestId"), await readJson(h), requestIdOf(h.c)),
  },
];
