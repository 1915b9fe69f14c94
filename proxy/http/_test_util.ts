/**
 * Test helpers: malformed responses, one rule broken each, for the
 * validators here and for the codecs that apply them.
 *
 * @module
 */

type Fields = Array<[string, string]>;

/** Regular fields that make any response head malformed (RFC 9110 §5, §8.6; RFC 9113 §8.2). */
export const MALFORMED_FIELDS: readonly Fields[] = [
  [["X-Upper", "1"]],
  [["x evil", "1"]],
  [["connection", "close"]],
  [["keep-alive", "timeout=5"]],
  [["proxy-connection", "x"]],
  [["transfer-encoding", "chunked"]],
  [["upgrade", "h2c"]],
  [["te", "gzip"]],
  [["x", "a\r\nb"]],
  [["x", "bell\x07"]],
  [["content-length", "1"], ["content-length", "2"]],
  [["content-length", "x"]],
  [[":path", "/"]],
];

/** Response sections (pseudo-headers included) whose `:status` breaks RFC 9113 §8.3.2. */
const BAD_STATUS: readonly Fields[] = [
  [],
  [["x", "no status"]],
  [["x", "1"], [":status", "200"]],
  [[":path", "/"], [":status", "200"]],
  [[":status", "200"], [":status", "200"]],
  [[":status", "200"], ["x", "1"], [":status", "200"]],
  [[":status", "2000"]],
  [[":status", "20"]],
  [[":status", "2x0"]],
  [[":status", "099"]],
  [[":status", "600"]],
];

/** Decoded response sections, each malformed in one way (its status, or one of its fields). */
export const MALFORMED_SECTIONS: readonly Fields[] = [
  ...BAD_STATUS,
  ...MALFORMED_FIELDS.map((f): Fields => [[":status", "200"], ...f]),
];
