import assert from "node:assert/strict";
import { isToken, responseHasNoBody, TCHAR } from "./fields.ts";

Deno.test("RFC 9110 §5.6.2: tchar is ALPHA, DIGIT and !#$%&'*+-.^_`|~, nothing else", () => {
  const expected = new Set("!#$%&'*+-.^_`|~");
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    const want = /[A-Za-z0-9]/.test(ch) || expected.has(ch);
    assert.equal(TCHAR[c] === 1, want, JSON.stringify(ch));
  }
});

Deno.test("RFC 9110 §5.6.2: a token is one or more tchar", () => {
  assert.equal(isToken("GET"), true);
  assert.equal(isToken("x-request-id"), true);
  assert.equal(isToken(""), false);
  assert.equal(isToken("a b"), false);
  assert.equal(isToken('"quoted"'), false);
  assert.equal(isToken("é"), false);
  assert.equal(isToken("a:b"), false);
  const lowercase = TCHAR.slice();
  for (let c = 0x41; c <= 0x5a; c++) lowercase[c] = 0;
  assert.equal(isToken("X-Id", lowercase), false);
  assert.equal(isToken("x-id", lowercase), true);
});

Deno.test("RFC 9110 §6.4.1: HEAD, 1xx, 204 and 304 responses carry no content", () => {
  assert.equal(responseHasNoBody("HEAD", 200), true);
  assert.equal(responseHasNoBody("GET", 204), true);
  assert.equal(responseHasNoBody("GET", 304), true);
  assert.equal(responseHasNoBody("GET", 103), true);
  assert.equal(responseHasNoBody("GET", 200), false);
  assert.equal(responseHasNoBody("POST", 404), false);
});
