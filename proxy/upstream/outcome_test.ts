/**
 * The retry rule of the outcome table, row by row: whether the backend may
 * have processed the request, and when it may be sent again (RFC 9113 §8.7,
 * RFC 9110 §9.2.2). The forwarding of each row is `phases/forward_test.ts`'s.
 *
 * @module
 */

import assert from "node:assert/strict";
import { isIdempotent } from "../http/mod.ts";
import {
  mayReplay,
  maySendAgain,
  outcomeOfError,
  OUTCOMES,
  type Processed,
  type RetryRule,
  retryRule,
  type UpstreamOutcome,
} from "./outcome.ts";
import { UpstreamError } from "./transport.ts";

/** Each row's `processed` and `retry`, written out independently of the table. */
const RULES: Record<UpstreamOutcome, [Processed, RetryRule]> = {
  answered: ["yes", "no"],
  answered_5xx: ["yes", "no"],
  connect: ["no", "any"],
  reset: ["maybe", "idempotent"],
  protocol: ["maybe", "idempotent"],
  invalid_response: ["yes", "no"],
  timeout: ["maybe", "no"],
  client_gone: ["maybe", "no"],
  local: ["no", "no"],
  internal: ["maybe", "no"],
  shutdown: ["maybe", "no"],
  no_candidate: ["no", "no"],
};

Deno.test("#35.1: the table has a retry rule for every outcome, and no other", () => {
  assert.deepEqual(Object.keys(OUTCOMES).sort(), Object.keys(RULES).sort());
});

for (
  const [outcome, [processed, retry]] of Object.entries(RULES) as Array<
    [UpstreamOutcome, [Processed, RetryRule]]
  >
) {
  Deno.test(`#35.1: outcome ${outcome}: processed ${processed}, sent again: ${retry}`, () => {
    const rule = OUTCOMES[outcome];
    assert.equal(rule.processed, processed);
    assert.equal(rule.retry, retry);
    assert.equal(maySendAgain(outcome, "POST"), retry === "any", "POST");
    assert.equal(maySendAgain(outcome, "PATCH"), retry === "any", "PATCH");
    assert.equal(maySendAgain(outcome, "GET"), retry !== "no", "GET");
    assert.equal(maySendAgain(outcome, "PUT"), retry !== "no", "PUT");
    assert.equal(mayReplay(outcome), retry === "any", "replayed by the transport");
  });
}

Deno.test("#35.1: RFC 9113 §8.7: a non-idempotent request is sent again only when the backend provably did not process it", () => {
  for (const outcome of Object.keys(OUTCOMES) as UpstreamOutcome[]) {
    if (maySendAgain(outcome, "POST")) assert.equal(OUTCOMES[outcome].processed, "no", outcome);
    if (mayReplay(outcome)) assert.equal(OUTCOMES[outcome].processed, "no", outcome);
  }
  // Only `connect` is such an outcome, and only the transport says it.
  const any = (Object.keys(OUTCOMES) as UpstreamOutcome[]).filter((o) => maySendAgain(o, "POST"));
  assert.deepEqual(any, ["connect"]);
  assert.equal(outcomeOfError(new UpstreamError("connect", "refused"), undefined), "connect");
});

Deno.test("a head that fails the response check is invalid_response whichever layer found it: a backend fault, never sent again", () => {
  const err = new UpstreamError("invalid_response", "backend sent an invalid response head");
  assert.ok(err.backendFault);
  assert.equal(outcomeOfError(err, undefined), "invalid_response");
  assert.equal(maySendAgain("invalid_response", "GET"), false);
  assert.equal(OUTCOMES.invalid_response.status, 502);
  assert.equal(OUTCOMES.invalid_response.health, "invalid_response");
});

Deno.test("#35.1: the retry rule derives what may go again from what the backend may have processed", () => {
  assert.equal(retryRule("no", true), "any");
  assert.equal(retryRule("maybe", true), "idempotent");
  assert.equal(retryRule("yes", true), "no");
  for (const p of ["no", "maybe", "yes"] as const) assert.equal(retryRule(p, false), "no");
});

Deno.test("RFC 9110 §9.2.2: what may have been processed goes again for http/'s idempotent methods only", () => {
  for (const m of ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST", "PATCH", "CONNECT", "get"]) {
    assert.equal(maySendAgain("reset", m), isIdempotent(m), m);
    assert.equal(maySendAgain("connect", m), true, m);
  }
  assert.ok(!maySendAgain("reset", "POST"));
  assert.ok(maySendAgain("reset", "PUT"));
});
