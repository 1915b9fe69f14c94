/**
 * Test helpers of the QPACK tests (hex conversion; `hex` is the codec tests' one).
 *
 * @module
 */

export { hex } from "../_test_util.ts";

/** Hex string of bytes. */
export function toHex(b: Uint8Array | null): string {
  if (b === null) return "";
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
