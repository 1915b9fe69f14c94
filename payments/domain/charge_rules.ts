/**
 * The charge state machine: capture, refund and void as pure functions from
 * a charge record to the next one (or a {@link PaymentsError}).
 *
 * | from | capture | refund | void |
 * |---|---|---|---|
 * | AUTHORIZED | CAPTURED (amount ≤ authorized) | full only → CANCELLED | CANCELLED |
 * | CAPTURED | 400 | REFUNDED (total ≤ captured) | CANCELLED (if nothing refunded) |
 * | REFUNDED | 400 | REFUNDED while balance remains | 400 |
 * | CANCELLED | 400 | 400 | 400 |
 * | DECLINED | 402 PMT-5000 | 402 PMT-5000 | 402 PMT-5000 |
 *
 * @module
 */
import { PaymentsError } from "./errors.ts";
import type { ChargeRecord, ContextRecord } from "./records.ts";

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

/** Capture an authorized charge. */
export function capture(charge: ChargeRecord, adj: Adjustment): ChargeRecord {
  refuseDeclined(charge);
  if (charge.status !== "AUTHORIZED") {
    throw PaymentsError.conflict(
      "status",
      `Charge ${charge.id} is ${charge.status}; only an AUTHORIZED charge can be captured`,
    );
  }
  const amount = adj.amount ?? charge.amount;
  if (amount <= 0 || amount > charge.amount) {
    throw PaymentsError.invalid("amount");
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

/** Refund a charge; returns the next charge and the refunded amount. */
export function refund(
  charge: ChargeRecord,
  adj: Adjustment,
): { charge: ChargeRecord; amount: number } {
  refuseDeclined(charge);
  if (charge.status === "AUTHORIZED") {
    const amount = adj.amount ?? charge.amount;
    if (amount !== charge.amount) {
      throw PaymentsError.invalid("amount");
    }
    return {
      charge: { ...charge, status: "CANCELLED", refunded: amount, updated: adj.now },
      amount,
    };
  }
  if (charge.status !== "CAPTURED" && charge.status !== "REFUNDED") {
    throw PaymentsError.conflict("status", `Charge ${charge.id} is ${charge.status}`);
  }
  const remaining = capturedAmount(charge) - charge.refunded;
  if (remaining <= 0) {
    throw PaymentsError.conflict("status", `Charge ${charge.id} is fully refunded`);
  }
  const amount = adj.amount ?? remaining;
  if (amount <= 0 || amount > remaining) {
    throw PaymentsError.invalid("amount");
  }
  return {
    charge: { ...charge, status: "REFUNDED", refunded: charge.refunded + amount, updated: adj.now },
    amount,
  };
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
  );
}
