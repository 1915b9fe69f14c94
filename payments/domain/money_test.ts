import assert from "node:assert/strict";
import { formatAmount, parseAmount } from "./money.ts";

Deno.test("parseAmount accepts decimal strings and numbers up to 99999.99", () => {
  assert.equal(parseAmount("0"), 0);
  assert.equal(parseAmount("0.00"), 0);
  assert.equal(parseAmount("10.5"), 1050);
  assert.equal(parseAmount("99999.99"), 9_999_999);
  assert.equal(parseAmount(10.1), 1010);
  assert.equal(parseAmount(0.29), 29);
  assert.equal(parseAmount(99999.99), 9_999_999);
});

Deno.test("parseAmount rejects negatives, too many decimals, out of range and junk", () => {
  for (const v of ["-1", "1.234", "100000", "100000.00", "1e3", "", " 1", "1.", ".5", "abc"]) {
    assert.equal(parseAmount(v), undefined, v);
  }
  for (const v of [-0.01, 1.234, 100000, NaN, Infinity]) assert.equal(parseAmount(v), undefined);
});

Deno.test("formatAmount always has two decimals", () => {
  assert.equal(formatAmount(0), "0.00");
  assert.equal(formatAmount(5), "0.05");
  assert.equal(formatAmount(1050), "10.50");
  assert.equal(formatAmount(9_999_999), "99999.99");
});
