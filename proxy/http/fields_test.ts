import assert from "node:assert/strict";
import {
  fieldNameError,
  fieldValueError,
  isToken,
  mergeContentLength,
  regularFieldError,
  TCHAR,
} from "./fields.ts";
import { isIdempotent, responseHasNoBody, statusHasNoBody } from "./message.ts";

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
  assert.equal(statusHasNoBody(100), true);
  assert.equal(statusHasNoBody(199), true);
  assert.equal(statusHasNoBody(200), false);
  assert.equal(statusHasNoBody(205), false);
});

Deno.test("RFC 9110 §9.2.2: GET, HEAD, OPTIONS, PUT and DELETE are idempotent", () => {
  for (const m of ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]) assert.equal(isIdempotent(m), true);
  for (const m of ["POST", "PATCH", "CONNECT", "get"]) assert.equal(isIdempotent(m), false);
});

Deno.test("RFC 9113 §8.2.1, RFC 9114 §4.2: a field name is a lowercase token", () => {
  assert.equal(fieldNameError("!#$%&'*+-.^_`|~09az"), null);
  for (const name of ["", "X-Up", "a b", "a:b", "caf\u00e9", "a\0", "x(y)", "x\x7f"]) {
    assert.notEqual(fieldNameError(name), null, JSON.stringify(name));
  }
  assert.match(fieldNameError("X-Up")!, /uppercase/);
});

Deno.test("RFC 9110 §5.5: a field value has no CTL but HTAB, no edge whitespace", () => {
  for (const v of ["", "tab\tinside", "obs-text \u00ff", "a, b"]) {
    assert.equal(fieldValueError("x", v), null, JSON.stringify(v));
  }
  for (const v of ["a\0b", "a\rb", "a\nb", "bell\x07", "del\x7f", " a", "a ", "\ta", "a\t"]) {
    assert.notEqual(fieldValueError("x", v), null, JSON.stringify(v));
  }
});

Deno.test("RFC 9113 §8.2.2: connection-specific fields, and TE only as trailers", () => {
  for (
    const name of ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]
  ) {
    assert.match(regularFieldError(name, "x")!, /connection-specific/);
  }
  assert.equal(regularFieldError("te", "trailers"), null);
  assert.equal(regularFieldError("te", "Trailers"), null);
  assert.match(regularFieldError("te", "gzip")!, /TE/);
  assert.equal(regularFieldError("x-a", "1"), null);
});

Deno.test("RFC 9110 §8.6: Content-Length values merge when equal; others are invalid", () => {
  assert.equal(mergeContentLength(-1, "0"), 0);
  assert.equal(mergeContentLength(-1, "1234"), 1234);
  assert.equal(mergeContentLength(5, "5"), 5);
  assert.equal(mergeContentLength(-1, "5, 5"), 5);
  for (const v of ["-1", "1.5", "abc", "", "0x10", "+5", "99999999999999999999", "5, 6", "5,"]) {
    assert.equal(typeof mergeContentLength(-1, v), "string", v);
  }
  assert.equal(typeof mergeContentLength(5, "6"), "string");
});
