/**
 * Sans-IO HTTP/3 codec (RFC 9114): varints, frames, SETTINGS, stream parsers
 * and request message validation. No I/O, no timers; it imports nothing
 * outside `proxy/h3/` but the HTTP rules of `proxy/http/` and what QPACK
 * shares with HPACK (`proxy/hpack_common/`). The HTTP semantics themselves
 * (heads, field rules, response validation) are `proxy/http/`'s.
 *
 * @example
 * ```ts
 * import { encodeFrame, FrameDecoder, FrameType, NEED_MORE } from "./mod.ts";
 *
 * const decoder = new FrameDecoder();
 * decoder.push(encodeFrame(FrameType.DATA, new TextEncoder().encode("hi")));
 * for (let ev = decoder.next(); ev !== NEED_MORE; ev = decoder.next()) console.log(ev);
 * ```
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
// Types of other packages that this package's signatures use.
export type { RequestHead } from "../http/mod.ts";
