import assert from "node:assert/strict";
import { headersFrameLimits } from "./header_limits.ts";

Deno.test("#35.4: HEADERS frame bounds: 431 above the limit + 1 KiB (16 KiB at least), close above 16 × the limit (1 MiB at least)", () => {
  assert.deepEqual(headersFrameLimits(16_384), { skipAbove: 17_408, closeAbove: 1_048_576 });
  assert.deepEqual(headersFrameLimits(65_536), { skipAbove: 66_560, closeAbove: 1_048_576 });
  assert.deepEqual(headersFrameLimits(1000), { skipAbove: 16_384, closeAbove: 1_048_576 });
  assert.deepEqual(headersFrameLimits(1 << 20), {
    skipAbove: (1 << 20) + 1024,
    closeAbove: 16 << 20,
  });
  // Both stay exact integers, the close bound never below the skip bound.
  const huge = headersFrameLimits(2 ** 52);
  assert.equal(huge.closeAbove, Number.MAX_SAFE_INTEGER);
  assert.ok(huge.skipAbove <= huge.closeAbove && Number.isSafeInteger(huge.skipAbove));
});
