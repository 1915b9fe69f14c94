/**
 * The status line (RFC 9112 §4) and field lines (RFC 9112 §5) of a response
 * head or trailer section, read incrementally and bounded: the section's
 * bytes and its number of field lines. Syntax only: what the fields mean
 * (framing, hop-by-hop fields) is `head.ts`'s.
 *
 * @module
 */

import { type FieldLine, fieldValueError, isToken } from "../http/mod.ts";
import { LineReader, NEED_MORE, type NeedMore, TOO_LONG } from "./lines.ts";

/** A parsed status line. */
export interface StatusLine {
  /** `1.0` or `1.1` (a later 1.x minor version counts as 1.1). */
  version: "1.0" | "1.1";
  /** The three-digit status code. */
  status: number;
  /** The reason phrase, possibly empty. */
  reason: string;
}

/** A complete section: the status line (heads only) and the field lines, names lowercased. */
export interface Section {
  /** The status line; absent for a trailer section. */
  statusLine?: StatusLine;
  /** Field lines in order, names lowercased, values without surrounding whitespace. */
  fields: FieldLine[];
  /** Index in the last input just past the blank line. */
  next: number;
}

/** The bounds of one section. */
export interface SectionLimits {
  /** Largest section in bytes, every line's CRLF included. */
  maxBytes: number;
  /** Most field lines. */
  maxFields: number;
}

const STATUS_LINE = /^HTTP\/1\.([0-9]) ([0-9]{3})(?: (.*))?$/;
// deno-lint-ignore no-control-regex
const REASON_BAD = /[\x00-\x08\x0a-\x1f\x7f]/;
const OWS = /^[ \t]+|[ \t]+$/g;

/**
 * Parses a status line (RFC 9112 §4): `HTTP/1.x`, SP, three digits, and an
 * optional SP and reason phrase. Returns it or why it is invalid.
 */
export function parseStatusLine(text: string): StatusLine | string {
  const m = STATUS_LINE.exec(text);
  if (m === null) {
    if (!text.startsWith("HTTP/1.")) {
      return `status line is not HTTP/1.x: ${JSON.stringify(text.slice(0, 32))}`;
    }
    return `malformed status line ${JSON.stringify(text.slice(0, 64))} (RFC 9112 §4)`;
  }
  const reason = m[3] ?? "";
  if (REASON_BAD.test(reason)) return "control character in the reason phrase (RFC 9112 §4)";
  return { version: m[1] === "0" ? "1.0" : "1.1", status: Number(m[2]), reason };
}

/**
 * Parses a field line (RFC 9112 §5): a token, a colon with no whitespace
 * before it (§5.1), the value without its surrounding whitespace. A line
 * starting with whitespace is obsolete line folding (§5.2): rejected.
 * Returns the lowercased name and the value, or why the line is invalid.
 */
export function parseFieldLine(text: string): FieldLine | string {
  const first = text.charCodeAt(0);
  if (first === 0x20 || first === 0x09) return "obsolete line folding (RFC 9112 §5.2)";
  const colon = text.indexOf(":");
  if (colon < 0) return `field line without a colon: ${JSON.stringify(text.slice(0, 64))}`;
  const name = text.slice(0, colon);
  if (!isToken(name)) {
    const last = name.charCodeAt(name.length - 1);
    if (last === 0x20 || last === 0x09) {
      return `whitespace between a field name and its colon (RFC 9112 §5.1)`;
    }
    return `invalid field name ${JSON.stringify(name.slice(0, 64))} (RFC 9110 §5.1)`;
  }
  const lower = name.toLowerCase();
  const value = text.slice(colon + 1).replace(OWS, "");
  const why = fieldValueError(lower, value);
  return why ?? [lower, value];
}

/** Reads one section out of successive inputs; make a new one per section. */
export class SectionReader {
  readonly #lines = new LineReader();
  readonly #limits: SectionLimits;
  #statusLine: StatusLine | undefined;
  #wantStatus: boolean;
  #bytes = 0;
  readonly #fields: FieldLine[] = [];

  /** `withStatusLine`: a response head (a status line first), else a trailer section. */
  constructor(withStatusLine: boolean, limits: SectionLimits) {
    this.#wantStatus = withStatusLine;
    this.#limits = limits;
  }

  /** Reads from `input` at `start`: the complete section, a wait, or why the section is invalid. */
  read(input: Uint8Array, start: number): Section | NeedMore | string {
    let at = start;
    for (;;) {
      const line = this.#lines.read(input, at, this.#limits.maxBytes - this.#bytes);
      if (line === NEED_MORE) return NEED_MORE;
      if (line === TOO_LONG) return `section over ${this.#limits.maxBytes} bytes`;
      if (typeof line === "string") return line;
      this.#bytes += line.next - at;
      at = line.next;
      if (this.#wantStatus) {
        const status = parseStatusLine(line.text);
        if (typeof status === "string") return status;
        this.#statusLine = status;
        this.#wantStatus = false;
        continue;
      }
      if (line.text.length === 0) {
        return { statusLine: this.#statusLine, fields: this.#fields, next: at };
      }
      if (this.#fields.length >= this.#limits.maxFields) {
        return `more than ${this.#limits.maxFields} field lines`;
      }
      const field = parseFieldLine(line.text);
      if (typeof field === "string") return field;
      this.#fields.push(field);
    }
  }
}
