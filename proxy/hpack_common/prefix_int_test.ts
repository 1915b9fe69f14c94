import assert from "node:assert/strict";
import {
  encodePrefixInt,
  PREFIX_INT_NEED_MORE,
  PREFIX_INT_TOO_LARGE,
  prefixIntEnd,
  readPrefixInt,
} from "./prefix_int.ts";
import { hex } from "./_test_util.ts";

Deno.test("RFC 7541 C.1.2: 1337 with a 5-bit prefix reads back", () => {
  const b = encodePrefixInt(1337, 5, 0xe0);
  assert.equal(readPrefixInt(b, 0, b.length, 5), 1337);
  assert.equal(prefixIntEnd, 3);
});

Deno.test("RFC 7541 §5.1: a cut integer asks for more bytes, never throws", () => {
  assert.equal(readPrefixInt(hex("1f9a"), 0, 2, 5), PREFIX_INT_NEED_MORE);
  assert.equal(readPrefixInt(hex(""), 0, 0, 5), PREFIX_INT_NEED_MORE);
});

Deno.test("RFC 7541 §5.1: an integer above 2^53-1 is a value, not an exception", () => {
  const b = hex("1fffffffffffffffffff7f");
  assert.equal(readPrefixInt(b, 0, b.length, 5), PREFIX_INT_TOO_LARGE);
});

// Guards `value > MAX_PREFIX_INT` on its own: eight continuation bytes stay
// under the length bound (`scale` reaches 2^56 only after the ninth), so with
// that check deleted this integer would read back as about 9.6e15, past 2^53-1.
Deno.test("RFC 7541 §5.1: an integer just past 2^53-1 within the length bound is too large", () => {
  const b = hex("1fffffffffffffffff10");
  assert.equal(readPrefixInt(b, 0, b.length, 5), PREFIX_INT_TOO_LARGE);
});
