/**
 * The HPACK static table (RFC 7541 Appendix A): 61 entries, index 1..61.
 *
 * @module
 */

/** Entries 1..61; index 0 of this array is entry 1. */
export const HPACK_STATIC_TABLE: ReadonlyArray<readonly [name: string, value: string]> = Object
  .freeze(
    [
      [":authority", ""],
      [":method", "GET"],
      [":method", "POST"],
      [":path", "/"],
      [":path", "/index.html"],
      [":scheme", "http"],
      [":scheme", "https"],
      [":status", "200"],
      [":status", "204"],
      [":status", "206"],
      [":status", "304"],
      [":status", "400"],
      [":status", "404"],
      [":status", "500"],
      ["accept-charset", ""],
      ["accept-encoding", "gzip, deflate"],
      ["accept-language", ""],
      ["accept-ranges", ""],
      ["accept", ""],
      ["access-control-allow-origin", ""],
      ["age", ""],
      ["allow", ""],
      ["authorization", ""],
      ["cache-control", ""],
      ["content-disposition", ""],
      ["content-encoding", ""],
      ["content-language", ""],
      ["content-length", ""],
      ["content-location", ""],
      ["content-range", ""],
      ["content-type", ""],
      ["cookie", ""],
      ["date", ""],
      ["etag", ""],
      ["expect", ""],
      ["expires", ""],
      ["from", ""],
      ["host", ""],
      ["if-match", ""],
      ["if-modified-since", ""],
      ["if-none-match", ""],
      ["if-range", ""],
      ["if-unmodified-since", ""],
      ["last-modified", ""],
      ["link", ""],
      ["location", ""],
      ["max-forwards", ""],
      ["proxy-authenticate", ""],
      ["proxy-authorization", ""],
      ["range", ""],
      ["referer", ""],
      ["refresh", ""],
      ["retry-after", ""],
      ["server", ""],
      ["set-cookie", ""],
      ["strict-transport-security", ""],
      ["transfer-encoding", ""],
      ["user-agent", ""],
      ["vary", ""],
      ["via", ""],
      ["www-authenticate", ""],
    ] as const,
  );

/** Per name: its first index and the indexes of its non-empty values. */
const BY_NAME = new Map<string, { first: number; values: Array<[string, number]> }>();
HPACK_STATIC_TABLE.forEach(([name, value], i) => {
  let e = BY_NAME.get(name);
  if (e === undefined) BY_NAME.set(name, e = { first: i + 1, values: [] });
  if (value !== "") e.values.push([value, i + 1]);
});

/**
 * The static index (1-based) of `name: value` when the table has the whole
 * field (> 0), else minus the first index of the name (< 0), else 0.
 */
export function hpackStaticLookup(name: string, value: string): number {
  const e = BY_NAME.get(name);
  if (e === undefined) return 0;
  for (const [v, i] of e.values) if (v === value) return i;
  return -e.first;
}
