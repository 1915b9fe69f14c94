import assert from "node:assert/strict";
import {
  abaValid,
  cardBrand,
  cardExpired,
  luhnValid,
  maskDigits,
  sha512Base64,
} from "./card_rules.ts";

Deno.test("luhnValid accepts test cards and rejects a changed digit", () => {
  for (const n of ["4111111111111111", "5555555555554444", "378282246310005", "6011111111111117"]) {
    assert.ok(luhnValid(n), n);
  }
  assert.equal(luhnValid("4111111111111112"), false);
  assert.equal(luhnValid("41111111111a1111"), false);
});

Deno.test("abaValid checks the 3-7-1 checksum", () => {
  assert.ok(abaValid("011000015"));
  assert.ok(abaValid("021000021"));
  assert.equal(abaValid("011000016"), false);
  assert.equal(abaValid("01100001"), false);
});

Deno.test("cardBrand detects the common brands", () => {
  assert.equal(cardBrand("4111111111111111"), "VISA");
  assert.equal(cardBrand("5555555555554444"), "MC");
  assert.equal(cardBrand("2221000000000009"), "MC");
  assert.equal(cardBrand("378282246310005"), "AMEX");
  assert.equal(cardBrand("6011111111111117"), "DISCOVER");
  assert.equal(cardBrand("3530111333300000"), "JCB");
  assert.equal(cardBrand("9999999999999995"), "UNKNOWN");
});

Deno.test("cardExpired compares month and year at the clock", () => {
  const now = new Date("2026-06-15T00:00:00Z");
  assert.equal(cardExpired(6, 2026, now), false);
  assert.equal(cardExpired(5, 2026, now), true);
  assert.equal(cardExpired(1, 2027, now), false);
  assert.equal(cardExpired(12, 2025, now), true);
});

Deno.test("masking and digest", async () => {
  assert.equal(maskDigits("1111"), "xxxxxxxxxxxx1111");
  const d = await sha512Base64("4111111111111111");
  assert.equal(atob(d).length, 64);
});
