/**
 * The charge state machine: capture, refund and void as pure functions from
 * a charge record to the next one (or a {@link PaymentsError}).
 *
 * | from | capture | refund | void |
 * |---|---|---|---|
 * | AUTHORIZED | CAPTURED (amount ≤ authorized) | full only → CANCELLED | CANCELLED |
 * | CAPTURED | 400 | CAPTURED while a balance remains, REFUNDED once none (total ≤ captured) | CANCELLED (if nothing refunded) |
 * | REFUNDED | 400 | 400 (nothing left) | 400 |
 * | CANCELLED | 400 | 400 | 400 |
 * | DECLINED | 402 PMT-5000 | 402 PMT-5000 | 402 PMT-5000 |
 *
 * A partial refund leaves the charge `CAPTURED` (its `refundDetail`,
 * `refunds` and `refundableAmount` tell what was returned); the refund that
 * returns the rest makes it `REFUNDED`. Failures carry the rule that failed
 * (`moreInfo`).
 *
 * @module
 */
import { PaymentsError } from "./errors.ts";
import { formatAmount } from "./money.ts";
import type { AdjustmentRecord, ChargeRecord, ContextRecord, ECheckRecord } from "./records.ts";

/** Most refunds one charge takes (each is listed in the charge). */
export const MAX_REFUNDS_PER_CHARGE = 100;

/** Inputs shared by capture and refund. */
export interface Adjustment {
  /** Amount in minor units; `undefined` means the full remaining amount. */
  amount?: number;
  /** Description. */
  description: string;
  /** Context. */
  context: ContextRecord;
  /** ISO timestamp of the operation. */
  now: string;
}

function refuseDeclined(charge: ChargeRecord): void {
  if (charge.status === "DECLINED") {
    throw PaymentsError.declined(`Charge ${charge.id} was declined`);
  }
}

/** Amount captured so far (the whole amount for a charge created with capture true). */
export function capturedAmount(charge: ChargeRecord): number {
  if (charge.captureDetail) return charge.captureDetail.amount;
  return charge.capture ? charge.amount : 0;
}

/**
 * What a refund may still return, in minor units: the rest of the captured
 * amount; the whole amount of an authorization (refunded only in full,
 * which cancels it); nothing once cancelled or declined.
 */
export function refundableAmount(charge: ChargeRecord): number {
  if (charge.status === "AUTHORIZED") return charge.amount;
  if (charge.status !== "CAPTURED" && charge.status !== "REFUNDED") return 0;
  return Math.max(0, capturedAmount(charge) - charge.refunded);
}

/** Capture an authorized charge. */
export function capture(charge: ChargeRecord, adj: Adjustment): ChargeRecord {
  refuseDeclined(charge);
  if (charge.status !== "AUTHORIZED") {
    throw PaymentsError.conflict(
      "status",
      `Charge ${charge.id} is ${charge.status}; only an AUTHORIZED charge can be captured`,
      "capture: once, of an AUTHORIZED charge",
    );
  }
  const amount = adj.amount ?? charge.amount;
  if (amount <= 0 || amount > charge.amount) {
    throw PaymentsError.invalid(
      "amount",
      undefined,
      `more than 0.00 and at most the authorized amount, ${formatAmount(charge.amount)}`,
    );
  }
  return {
    ...charge,
    status: "CAPTURED",
    updated: adj.now,
    captureDetail: {
      amount,
      context: adj.context,
      created: adj.now,
      description: adj.description,
    },
  };
}

/**
 * Refund a charge; returns the next charge (listing refund `id`) and the
 * refunded amount.
 */
export function refund(
  charge: ChargeRecord,
  adj: Adjustment,
  id: string,
): { charge: ChargeRecord; amount: number } {
  refuseDeclined(charge);
  const refunds = charge.refunds ?? [];
  if (refunds.length >= MAX_REFUNDS_PER_CHARGE) {
    throw PaymentsError.conflict(
      "status",
      `Charge ${charge.id} has ${refunds.length} refunds`,
      `at most ${MAX_REFUNDS_PER_CHARGE} refunds per charge`,
    );
  }
  const remaining = refundableAmount(charge);
  let status: ChargeRecord["status"] = "REFUNDED";
  let amount: number;
  if (charge.status === "AUTHORIZED") {
    amount = adj.amount ?? charge.amount;
    if (amount !== charge.amount) {
      throw PaymentsError.invalid(
        "amount",
        undefined,
        `an authorization is refunded only in full (${formatAmount(charge.amount)})`,
      );
    }
    status = "CANCELLED";
  } else {
    if (charge.status !== "CAPTURED" && charge.status !== "REFUNDED") {
      throw PaymentsError.conflict(
        "status",
        `Charge ${charge.id} is ${charge.status}`,
        "refund: a CAPTURED charge, or an AUTHORIZED one in full",
      );
    }
    if (remaining <= 0) {
      throw PaymentsError.conflict(
        "status",
        `Charge ${charge.id} is fully refunded`,
        "remaining refundable amount: 0.00",
      );
    }
    amount = refundAmount(adj, remaining);
  }
  if (status === "REFUNDED" && amount < remaining) status = "CAPTURED";
  const entry = refundEntry(id, amount, adj);
  return {
    charge: {
      ...charge,
      status,
      refunded: charge.refunded + amount,
      refunds: [...refunds, entry],
      updated: adj.now,
    },
    amount,
  };
}

/**
 * The amount a refund asks for (the whole `remaining` when it names none);
 * 400 `amount is invalid.` unless more than 0 and at most `remaining`.
 */
function refundAmount(adj: Adjustment, remaining: number): number {
  const amount = adj.amount ?? remaining;
  if (amount <= 0 || amount > remaining) {
    throw PaymentsError.invalid(
      "amount",
      undefined,
      `more than 0.00 and at most the remaining refundable amount, ${formatAmount(remaining)}`,
    );
  }
  return amount;
}

/** The entry a charge or an e-check keeps of refund `id` of `amount`. */
function refundEntry(id: string, amount: number, adj: Adjustment) {
  return { id, amount, created: adj.now, description: adj.description, context: adj.context };
}

/** Void a charge (authorized, or captured with nothing refunded). */
export function voidCharge(
  charge: ChargeRecord,
  now: string,
): { charge: ChargeRecord; amount: number } {
  refuseDeclined(charge);
  if (charge.status === "AUTHORIZED" || (charge.status === "CAPTURED" && charge.refunded === 0)) {
    const amount = charge.status === "CAPTURED" ? capturedAmount(charge) : charge.amount;
    return { charge: { ...charge, status: "CANCELLED", updated: now }, amount };
  }
  throw PaymentsError.conflict(
    "status",
    `Charge ${charge.id} is ${charge.status}; it cannot be voided`,
    "void: an AUTHORIZED charge, or a CAPTURED one with nothing refunded",
  );
}

/** What a refund of an e-check may still return, in minor units (nothing once declined or voided). */
export function echeckRefundable(echeck: ECheckRecord): number {
  if (echeck.status !== "PENDING" && echeck.status !== "SUCCEEDED") return 0;
  return Math.max(0, echeck.amount - (echeck.refunded ?? 0));
}

/** Most refunds one e-check takes. */
export const MAX_REFUNDS_PER_ECHECK = 100;

/**
 * Refund an e-check (PENDING or SUCCEEDED; total ≤ its amount); the e-check
 * reads `REFUNDED` once nothing is left to refund.
 */
export function refundECheck(
  echeck: ECheckRecord,
  adj: Adjustment,
  id: string,
): { echeck: ECheckRecord; amount: number } {
  const refunds = echeck.refunds ?? [];
  const remaining = echeckRefundable(echeck);
  if (refunds.length >= MAX_REFUNDS_PER_ECHECK) {
    throw PaymentsError.conflict(
      "status",
      `E-check ${echeck.id} has ${refunds.length} refunds`,
      `at most ${MAX_REFUNDS_PER_ECHECK} refunds per e-check`,
    );
  }
  if (remaining <= 0) {
    throw PaymentsError.conflict(
      "status",
      `E-check ${echeck.id} is ${echeck.status}`,
      "refund: a PENDING or SUCCEEDED e-check with an amount left to refund",
    );
  }
  const amount = refundAmount(adj, remaining);
  const entry = refundEntry(id, amount, adj);
  return {
    echeck: {
      ...echeck,
      status: amount === remaining ? "REFUNDED" : echeck.status,
      refunded: (echeck.refunded ?? 0) + amount,
      refunds: [...refunds, entry],
    },
    amount,
  };
}

/** A refund or void record, issued at `now`. */
export function issued(
  type: AdjustmentRecord["type"],
  id: string,
  chargeId: string,
  amount: number,
  now: string,
  details: Pick<AdjustmentRecord, "description" | "context">,
): AdjustmentRecord {
  const { description, context } = details;
  return { id, chargeId, type, status: "ISSUED", amount, created: now, description, context };
}
