import assert from "node:assert/strict";
import type { z } from "@hono/zod-openapi";
import type * as S from "./payments_schemas.ts";
import type * as W from "./payments_wire.ts";

/** `true` only when `A` and `B` are the same type (not merely assignable either way). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;

/** Each written-out wire type against what its schema infers: a mismatch fails type checking. */
const SAME: { [name: string]: true } = {
  ContextOutput: true as Same<W.ContextOutput, z.infer<typeof S.ContextOutput>>,
  Address: true as Same<W.Address, z.infer<typeof S.Address>>,
  CardCreated: true as Same<W.CardCreated, z.infer<typeof S.CardCreated>>,
  Card: true as Same<W.Card, z.infer<typeof S.Card>>,
  BankAccount: true as Same<W.BankAccount, z.infer<typeof S.BankAccount>>,
  ChargeCard: true as Same<W.ChargeCard, z.infer<typeof S.ChargeCard>>,
  CaptureDetail: true as Same<W.CaptureDetail, z.infer<typeof S.CaptureDetail>>,
  RefundSummary: true as Same<W.RefundSummary, z.infer<typeof S.RefundSummary>>,
  ChargeStatus: true as Same<W.ChargeStatus, z.infer<typeof S.ChargeStatus>>,
  Charge: true as Same<W.Charge, z.infer<typeof S.Charge>>,
  Refund: true as Same<W.Refund, z.infer<typeof S.Refund>>,
  Void: true as Same<W.Void, z.infer<typeof S.Void>>,
  ECheck: true as Same<W.ECheck, z.infer<typeof S.ECheck>>,
  Token: true as Same<W.Token, z.infer<typeof S.Token>>,
  ErrorItem: true as Same<W.ErrorItem, z.infer<typeof S.ErrorItem>>,
  ErrorEnvelope: true as Same<W.ErrorEnvelope, z.infer<typeof S.ErrorEnvelope>>,
};

Deno.test("payments_wire: every written-out type is exactly what its schema infers", () => {
  // The check is the type checker's; this only keeps the table in the test run.
  assert.equal(Object.keys(SAME).length, 16);
});
