/**
 * Validation of a backend's response, whatever carried it: one definition
 * of a well-formed response head and trailer section, used by the HTTP/2
 * client codec on every section it decodes and by the response phase on
 * whatever head a transport hands over. Every check returns why the section
 * is malformed (a sentence for the log line and the 502), never throws.
 *
 * @example
 * ```ts
 * import { parseResponseSection, validateResponseHead } from "./response.ts";
 * validateResponseHead(200, [["content-length", "2"]]); // 2
 * validateResponseHead(600, []); // "invalid :status 600 (RFC 9110 §15)"
 * parseResponseSection([[":status", "204"], ["server", "x"]]);
 * // { status: 204, fields: [["server", "x"]], contentLength: -1 }
 * ```
 *
 * @module
 */

import { mergeContentLength, regularFieldError } from "./fields.ts";
import type { FieldLine, ResponseHead } from "./message.ts";

const STATUS = /^[0-9]{3}$/;

/**
 * Why `status` cannot be a final response's status, or null: a status is
 * 100-599 (RFC 9110 §15), a 1xx head is never final (RFC 9113 §8.1, RFC
 * 9114 §4.1) and 101 has no place in HTTP/2 or HTTP/3 (RFC 9113 §8.6, RFC
 * 9114 §4.5).
 */
export function finalStatusError(status: number): string | null {
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    return `invalid :status ${status} (RFC 9110 §15)`;
  }
  if (status === 101) return ":status 101 is not allowed (RFC 9113 §8.6)";
  if (status < 200) return `informational :status ${status} as the final response (RFC 9113 §8.1)`;
  return null;
}

/**
 * Checks the regular fields of a response head, from index `from` on: no
 * pseudo-header, every field well formed and not connection-specific
 * (RFC 9113 §8.2, RFC 9114 §4.2), agreeing Content-Length values (RFC 9110
 * §8.6). Returns the Content-Length (-1 when none is declared) or why the
 * head is malformed. Allocates nothing on a valid head.
 */
export function responseFieldsError(
  fields: ReadonlyArray<readonly [string, string]>,
  from = 0,
): number | string {
  let contentLength = -1;
  for (let i = from; i < fields.length; i++) {
    const [name, value] = fields[i];
    if (name.charCodeAt(0) === 0x3a) return `pseudo-header ${name} in a response (RFC 9113 §8.3)`;
    const why = regularFieldError(name, value);
    if (why !== null) return why;
    if (name === "content-length") {
      const merged = mergeContentLength(contentLength, value);
      if (typeof merged === "string") return merged;
      contentLength = merged;
    }
  }
  return contentLength;
}

/**
 * Validates the final response head of a backend as a transport hands it
 * over (status apart, pseudo-headers removed): {@link finalStatusError} on
 * the status, {@link responseFieldsError} on the fields. Returns the
 * Content-Length (-1 when none) or why the head may not be forwarded.
 */
export function validateResponseHead(
  status: number,
  fields: ReadonlyArray<readonly [string, string]>,
): number | string {
  return finalStatusError(status) ?? responseFieldsError(fields);
}

/**
 * Validates a decoded response header section, pseudo-headers included
 * (RFC 9113 §8.3.2, RFC 9114 §4.3.2): exactly one `:status` of three digits,
 * 100-599, before every regular field, and no other pseudo-header; then the
 * regular fields as {@link responseFieldsError} does. An informational
 * status passes: whether it may stand where it is, is the caller's to say.
 */
export function parseResponseSection(fields: FieldLine[]): ResponseHead | string {
  if (fields.length === 0 || fields[0][0] !== ":status") {
    const first = fields.find(([name]) => name.charCodeAt(0) === 0x3a)?.[0];
    if (first === undefined || first === ":status") {
      return first === undefined ? "response without :status" : ":status after a regular field";
    }
    return `pseudo-header ${first} in a response (RFC 9113 §8.3)`;
  }
  const value = fields[0][1];
  if (!STATUS.test(value)) return `:status ${JSON.stringify(value)} is not three digits`;
  const status = Number(value);
  if (status < 100 || status > 599) return `:status ${value} outside 100-599 (RFC 9110 §15)`;
  if (fields.length > 1 && fields[1][0] === ":status") return "repeated :status";
  const contentLength = responseFieldsError(fields, 1);
  if (typeof contentLength === "string") return contentLength;
  return { status, fields: fields.slice(1), contentLength };
}

/**
 * Why a response's trailer section is malformed, or null: no pseudo-header
 * (RFC 9113 §8.1, RFC 9114 §4.3), every field well formed and not
 * connection-specific. Fields that may not be trailers (RFC 9110 §6.5.1,
 * `allowedInTrailers`) are not malformed here: the server drops them when
 * it forwards the section.
 */
export function trailerSectionError(
  fields: ReadonlyArray<readonly [string, string]>,
): string | null {
  for (const [name, value] of fields) {
    if (name.charCodeAt(0) === 0x3a) return `pseudo-header ${name} in trailers (RFC 9113 §8.1)`;
    const why = regularFieldError(name, value);
    if (why !== null) return why;
  }
  return null;
}
