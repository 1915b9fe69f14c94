/**
 * Sans-IO HTTP/3 codec (RFC 9114): varints, frames, SETTINGS, stream parsers
 * and message validation. No I/O, no timers; nothing imported from outside
 * `proxy/h3/`.
 *
 * @module
 */

export * from "./errors.ts";
export * from "./varint.ts";
export * from "./settings.ts";
export * from "./frames.ts";
export * from "./streams.ts";
export * from "./message.ts";

// QPACK (RFC 9204)
export * from "./qpack/mod.ts";
