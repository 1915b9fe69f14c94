/**
 * Serialization of a request toward an HTTP/1.1 backend (RFC 9112 §3, §6,
 * §7.1): the request line from the shared request head, Host from
 * `:authority` (§3.2), the end-to-end fields, the body's framing, and the
 * chunk encoder for a body of unknown length (with its trailer section).
 * Every octet that could end a line or a field early (CR, LF, NUL, a space
 * in the target) is refused rather than sent: it would be request smuggling
 * toward the backend (RFC 9110 §5.5, RFC 9112 §11.2).
 *
 * @example
 * ```ts
 * import { serializeRequestHead } from "./request.ts";
 * serializeRequestHead(
 *   { method: "GET", scheme: "https", authority: "a.example", path: "/", fields: [] },
 *   { kind: "none" },
 * ); // bytes of "GET / HTTP/1.1\r\nhost: a.example\r\n\r\n"
 * ```
 *
 * @module
 */

import {
  allowedInTrailers,
  type FieldLine,
  fieldValueError,
  HOP_BY_HOP,
  isToken,
  type RequestHead,
} from "../http/mod.ts";

/**
 * How the request's content is framed: `none` (no content and no framing
 * field, as a GET), `length` (Content-Length, 0 included), or `chunked` (a
 * length not known in advance; the body goes through {@link encodeChunk}
 * and {@link encodeLastChunk}).
 */
export type RequestBody = { kind: "none" } | { kind: "length"; length: number } | {
  kind: "chunked";
};

/** Characters a request target or Host may not hold: controls, space, DEL, non-ASCII. */
// deno-lint-ignore no-control-regex
const TARGET_BAD = /[\x00-\x20\x7f-\uffff]/;
/** Fields the serializer writes itself from the head and the body's framing. */
const FRAMED = new Set(["host", "content-length"]);
const ENCODER = new TextEncoder();

/** Why `value` cannot be sent as the value of `name`, or null (RFC 9110 §5.5). */
function valueError(name: string, value: string): string | null {
  // deno-lint-ignore no-control-regex
  if (/[^\x00-\xff]/.test(value)) return `non-octet character in the value of ${name}`;
  return fieldValueError(name, value);
}

/** Why a field line cannot be sent, or null. */
function fieldError(name: string, value: string): string | null {
  if (!isToken(name)) return `invalid field name ${JSON.stringify(name)} (RFC 9110 §5.1)`;
  return valueError(name, value);
}

/** The request target (RFC 9112 §3.2): authority-form for CONNECT, else origin-form. */
function targetOf(head: RequestHead): string {
  if (head.method === "CONNECT") return head.authority ?? "";
  return head.path === undefined || head.path === "" ? "/" : head.path;
}

/** Octets of a string whose characters are all below 0x100 (checked by the caller). */
function octets(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** The field names a Connection field lists: they concern only the client's hop (RFC 9110 §7.6.1). */
function connectionOptions(fields: readonly FieldLine[]): Set<string> {
  const out = new Set<string>();
  for (const [n, v] of fields) {
    if (n.toLowerCase() !== "connection") continue;
    for (const t of v.split(",")) out.add(t.trim().toLowerCase());
  }
  return out;
}

/** Whether the request carries `te: trailers` (the client accepts trailers, RFC 9110 §10.1.4). */
function acceptsTrailers(fields: readonly FieldLine[]): boolean {
  return fields.some(([n, v]) => n.toLowerCase() === "te" && v.toLowerCase() === "trailers");
}

/**
 * Serializes a request head (RFC 9112 §3): the request line, `host` from
 * `:authority` (or the request's own `host` field, else empty, §3.2), the
 * fields that are not connection-specific or hop-by-hop, then the framing
 * of `body`: `content-length` or `transfer-encoding: chunked`. `te: trailers`
 * is forwarded, with `connection: te`, only when the client sent it: the
 * backend then knows trailers will reach someone who asked for them
 * (RFC 9110 §10.1.4, §7.6.1). `upgrade` (a protocol token, e.g.
 * `websocket`) asks the backend to switch protocols: `connection: upgrade`
 * and `upgrade: <token>` are written (RFC 9110 §7.8), the only hop-by-hop
 * fields the proxy sends of its own. Returns the bytes or why the head cannot
 * be sent safely.
 */
export function serializeRequestHead(
  head: RequestHead,
  body: RequestBody,
  upgrade?: string,
): Uint8Array | string {
  if (!isToken(head.method)) return `invalid method ${JSON.stringify(head.method)}`;
  const target = targetOf(head);
  if (target === "" || TARGET_BAD.test(target)) {
    return `invalid request target ${JSON.stringify(target.slice(0, 64))}`;
  }
  const host = head.authority ?? head.fields.find(([n]) => n.toLowerCase() === "host")?.[1] ?? "";
  if (TARGET_BAD.test(host)) return `invalid host ${JSON.stringify(host.slice(0, 64))}`;
  let text = `${head.method} ${target} HTTP/1.1\r\nhost: ${host}\r\n`;
  const named = connectionOptions(head.fields);
  for (const [name, value] of head.fields) {
    const why = fieldError(name, value);
    if (why !== null) return why;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || FRAMED.has(lower) || named.has(lower)) continue;
    text += `${name}: ${value}\r\n`;
  }
  if (upgrade !== undefined) {
    if (!isToken(upgrade)) return `invalid upgrade protocol ${JSON.stringify(upgrade)}`;
    text += `connection: upgrade\r\nupgrade: ${upgrade}\r\n`;
  } else if (acceptsTrailers(head.fields)) text += "te: trailers\r\nconnection: te\r\n";
  const framing = framingField(body);
  if (typeof framing !== "string") return framing.error;
  return octets(`${text}${framing}\r\n`);
}

/** The framing field line of `body` (with its CRLF), or why the length is invalid. */
function framingField(body: RequestBody): string | { error: string } {
  switch (body.kind) {
    case "none":
      return "";
    case "chunked":
      return "transfer-encoding: chunked\r\n";
    case "length":
      if (!Number.isSafeInteger(body.length) || body.length < 0) {
        return { error: `invalid content length ${body.length}` };
      }
      return `content-length: ${body.length}\r\n`;
  }
}

/**
 * One chunk of a chunked body (RFC 9112 §7.1): size in hex, CRLF, the data,
 * CRLF. Empty data gives no bytes: a zero-size chunk would end the body.
 */
export function encodeChunk(data: Uint8Array): Uint8Array {
  if (data.length === 0) return new Uint8Array(0);
  const size = ENCODER.encode(`${data.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + data.length + 2);
  out.set(size);
  out.set(data, size.length);
  out[out.length - 2] = 0x0d;
  out[out.length - 1] = 0x0a;
  return out;
}

/**
 * The end of a chunked body (RFC 9112 §7.1.2): the last chunk and the
 * trailer section. Fields that may not be trailers (RFC 9110 §6.5.1) are
 * left out; a field that is malformed (CR, LF, NUL, an invalid name) makes
 * the whole section refused: returns why.
 */
export function encodeLastChunk(trailers: readonly FieldLine[] = []): Uint8Array | string {
  let text = "0\r\n";
  for (const [name, value] of trailers) {
    const why = fieldError(name, value);
    if (why !== null) return `trailers: ${why}`;
    if (allowedInTrailers(name.toLowerCase())) text += `${name}: ${value}\r\n`;
  }
  return octets(`${text}\r\n`);
}
