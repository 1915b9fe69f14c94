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

const NAME_INDEX = new Map<string, number>();
const FULL_INDEX = new Map<string, number>();
HPACK_STATIC_TABLE.forEach(([name, value], i) => {
  if (!NAME_INDEX.has(name)) NAME_INDEX.set(name, i + 1);
  if (value !== "") FULL_INDEX.set(`${name}\0${value}`, i + 1);
});

/** The first static index (1-based) whose name is `name`, or 0. */
export function hpackStaticNameIndex(name: string): number {
  return NAME_INDEX.get(name) ?? 0;
}

/** The static index (1-based) of `name: value` with a non-empty value, or 0. */
export function hpackStaticIndex(name: string, value: string): number {
  return FULL_INDEX.get(`${name}\0${value}`) ?? 0;
}
