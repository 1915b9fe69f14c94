/**
 * The chunked transfer coding of a response's content (RFC 9112 §7.1),
 * decoded incrementally: chunk-size lines (hex digits, optional extensions,
 * bounded in length), chunk data as views of the input, the CRLF after each
 * chunk, the last chunk and its trailer section. Strict where smuggling
 * lives: an invalid chunk size, a size past 2^53, malformed extensions or
 * anything but CRLF after a chunk's data end the body with an error.
 *
 * @module
 */

import { LineReader, NEED_MORE, TOO_LONG } from "./lines.ts";
import { type Section, type SectionLimits, SectionReader } from "./section.ts";

const HEX = /^[0-9a-fA-F]+/;
/** What may follow the size: `*( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )` (RFC 9112 §7.1.1). */
const EXTENSIONS =
  /^(?:[ \t]*;[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*=[ \t]*(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"))?)*$/;
const CRLF_LENGTH = 2;

/** What one step of the decoder produced. */
export type ChunkedStep =
  /** Content bytes, a view of the input. */
  | { type: "data"; data: Uint8Array; next: number }
  /** The body is complete: its trailer section (possibly no fields). */
  | { type: "done"; trailers: Section }
  /** Every byte given was consumed; more are needed. */
  | { type: "more" }
  /** The coding is broken. */
  | { type: "error"; reason: string };

/** Parses a chunk-size line: the size, or why the line is invalid. */
export function parseChunkSize(text: string): number | string {
  const digits = HEX.exec(text)?.[0];
  if (digits === undefined) return `invalid chunk size ${JSON.stringify(text.slice(0, 32))}`;
  if (!EXTENSIONS.test(text.slice(digits.length))) {
    return `invalid chunk extension ${JSON.stringify(text.slice(0, 64))} (RFC 9112 §7.1.1)`;
  }
  const size = parseInt(digits, 16);
  if (!Number.isSafeInteger(size)) return `chunk size too large: ${digits.slice(0, 32)}`;
  return size;
}

/** Decodes one chunked body out of successive inputs. */
export class ChunkedDecoder {
  readonly #lines = new LineReader();
  readonly #maxLine: number;
  readonly #trailerLimits: SectionLimits;
  #state: "size" | "data" | "crlf" | "trailers" = "size";
  /** Bytes of the current chunk still to come, or of its CRLF in the `crlf` state. */
  #remaining = 0;
  #trailers: SectionReader | undefined;

  /** `maxLine`: longest chunk-size line with its CRLF; `trailerLimits`: the trailer section's bounds. */
  constructor(maxLine: number, trailerLimits: SectionLimits) {
    this.#maxLine = maxLine;
    this.#trailerLimits = trailerLimits;
  }

  /** Advances over `input` from `start`; call again from `next` after each `data` step. */
  step(input: Uint8Array, start: number): ChunkedStep {
    let at = start;
    while (at < input.length || this.#state === "trailers") {
      switch (this.#state) {
        case "size": {
          const line = this.#lines.read(input, at, this.#maxLine);
          if (line === NEED_MORE) return { type: "more" };
          if (line === TOO_LONG) return this.#error(`chunk-size line over ${this.#maxLine} bytes`);
          if (typeof line === "string") return this.#error(line);
          const size = parseChunkSize(line.text);
          if (typeof size === "string") return this.#error(size);
          at = line.next;
          if (size === 0) {
            this.#state = "trailers";
            this.#trailers = new SectionReader(false, this.#trailerLimits);
          } else {
            this.#state = "data";
            this.#remaining = size;
          }
          break;
        }
        case "data": {
          const n = Math.min(this.#remaining, input.length - at);
          this.#remaining -= n;
          if (this.#remaining === 0) {
            this.#state = "crlf";
            this.#remaining = CRLF_LENGTH;
          }
          return { type: "data", data: input.subarray(at, at + n), next: at + n };
        }
        case "crlf": {
          const expected = this.#remaining === CRLF_LENGTH ? 0x0d : 0x0a;
          if (input[at] !== expected) return this.#error("chunk data not followed by CRLF");
          at++;
          if (--this.#remaining === 0) this.#state = "size";
          break;
        }
        case "trailers": {
          const section = this.#trailers!.read(input, at);
          if (section === NEED_MORE) return { type: "more" };
          if (typeof section === "string") return this.#error(`trailer section: ${section}`);
          return { type: "done", trailers: section };
        }
      }
    }
    return { type: "more" };
  }

  #error(reason: string): ChunkedStep {
    return { type: "error", reason };
  }
}
