/**
 * CRLF-terminated lines (RFC 9112 §2.2), read incrementally from the bytes a
 * backend sends: a line split across reads is kept until its end arrives,
 * bounded by the caller's limit. Strict where smuggling lives: a line ends
 * with CR LF only (a bare LF is no line end here), and a CR anywhere else in
 * a line is an error (RFC 9112 §2.2).
 *
 * @module
 */

/** Returned while a line's end has not arrived yet: every byte given is kept. */
export const NEED_MORE: unique symbol = Symbol("need more bytes");
/** Type of {@link NEED_MORE}. */
export type NeedMore = typeof NEED_MORE;
/** Returned when a line (its CRLF included) would be longer than the limit. */
export const TOO_LONG: unique symbol = Symbol("line too long");

/** One complete line (without its CRLF, one character per octet) and where the next begins. */
export interface Line {
  /** The line's octets as characters. */
  text: string;
  /** Index in the input just past the line's LF. */
  next: number;
}

/** What {@link LineReader.read} returns: a line, a wait, a bound hit, or why the line is invalid. */
export type LineResult = Line | NeedMore | typeof TOO_LONG | string;

const CR = 0x0d;
const LF = 0x0a;

/** Octets to characters, one for one (no decoding: field values may carry obs-text). */
export function latin1(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return out;
}

/** Reads CRLF-terminated lines out of successive inputs. */
export class LineReader {
  #pending: Uint8Array[] = [];
  #pendingLength = 0;

  /**
   * Reads one line from `input` at `start`, at most `limit` bytes long with
   * its CRLF (counting the bytes kept from earlier inputs).
   */
  read(input: Uint8Array, start: number, limit: number): LineResult {
    const lf = input.indexOf(LF, start);
    const end = lf < 0 ? input.length : lf + 1;
    if (this.#pendingLength + end - start > limit) return TOO_LONG;
    if (lf < 0) {
      if (end > start) this.#pending.push(input.slice(start, end));
      this.#pendingLength += end - start;
      return NEED_MORE;
    }
    const bytes = this.#take(input.subarray(start, lf));
    if (bytes.length === 0 || bytes[bytes.length - 1] !== CR) {
      return "LF without CR as a line end (RFC 9112 §2.2)";
    }
    const content = bytes.subarray(0, bytes.length - 1);
    if (content.indexOf(CR) >= 0) return "bare CR in a line (RFC 9112 §2.2)";
    return { text: latin1(content), next: lf + 1 };
  }

  /** The kept bytes followed by `tail`, as one array; the reader is empty after. */
  #take(tail: Uint8Array): Uint8Array {
    if (this.#pendingLength === 0) return tail;
    const out = new Uint8Array(this.#pendingLength + tail.length);
    let at = 0;
    for (const part of this.#pending) {
      out.set(part, at);
      at += part.length;
    }
    out.set(tail, at);
    this.#pending = [];
    this.#pendingLength = 0;
    return out;
  }
}
