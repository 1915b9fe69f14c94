import assert from "node:assert/strict";
import { parseApiKeys } from "./api_keys.ts";

const KEY_A = "team-a-0123456789abcdef";
const KEY_B = "team-b-fedcba9876543210";

Deno.test("#31.2: api keys: one per line, comments and blank lines skipped, whitespace trimmed", () => {
  const parsed = parseApiKeys(`# rotated 2026-11\n\n  ${KEY_A}  \r\n${KEY_B}\n`);
  assert.ok(parsed.ok);
  assert.equal(parsed.keys.size, 2);
  assert.ok(parsed.keys.matches(KEY_A));
  assert.ok(parsed.keys.matches(KEY_B));
});

Deno.test("#31.2: api keys: a wrong key, a prefix, an extension, another case and the empty key do not match", () => {
  const parsed = parseApiKeys(KEY_A);
  assert.ok(parsed.ok);
  for (const wrong of ["", KEY_A.slice(0, -1), `${KEY_A}x`, KEY_A.toUpperCase(), ` ${KEY_A}`]) {
    assert.equal(parsed.keys.matches(wrong), false, JSON.stringify(wrong));
  }
});

Deno.test("#31.2: api keys: a bad line is named by its number and never echoed", () => {
  const cases: Array<[string, number | undefined, RegExp]> = [
    [`${KEY_A}\nshort-key\n`, 2, /shorter than 16/],
    [`${KEY_A}\nhas a space in it 1234\n`, 2, /visible ASCII/],
    [`# c\n${KEY_A}\n${KEY_B}\n${KEY_A}\n`, 4, /repeats the key of line 2/],
    [`${"k".repeat(4097)}\n`, 1, /longer than 4096/],
    ["# only a comment\n\n", undefined, /holds no key/],
  ];
  for (const [text, line, message] of cases) {
    const parsed = parseApiKeys(text);
    assert.ok(!parsed.ok, text);
    assert.equal(parsed.line, line, text);
    assert.match(parsed.message, message);
    assert.ok(!parsed.message.includes(KEY_A) && !parsed.message.includes("short-key"));
  }
});
