/**
 * The WebSocket opening handshake whatever version carries it: HTTP/1.1's
 * `Upgrade` (RFC 6455 §4), HTTP/2's and HTTP/3's extended CONNECT (RFC 8441
 * §4-5, RFC 9220 §3). The proxy relays the WebSocket bytes and never parses a
 * frame; what it decides is the handshake: whether an HTTP/1.1 request asks
 * for an upgrade, which fields belong to the HTTP/1.1 handshake alone
 * (`Sec-WebSocket-Key` and `-Accept` are not used over HTTP/2 and HTTP/3,
 * RFC 8441 §5), the key it makes for an HTTP/1.1 backend, and the
 * `Sec-WebSocket-Accept` that key calls for.
 *
 * @example
 * ```ts
 * import { websocketAccept } from "./websocket.ts";
 * await websocketAccept("dGhlIHNhbXBsZSBub25jZQ=="); // "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" (RFC 6455 §1.3)
 * ```
 *
 * @module
 */

import { fieldTokens } from "./fields.ts";
import type { FieldLine } from "./message.ts";

/** The GUID a key is hashed with (RFC 6455 §1.3). */
const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** A `Sec-WebSocket-Key`: 16 octets in base64 (RFC 6455 §4.1), 24 characters. */
const KEY = /^[A-Za-z0-9+/]{22}==$/;

/** The extended CONNECT protocol token of WebSockets (RFC 8441 §4, RFC 9220 §3). */
export const WEBSOCKET_PROTOCOL = "websocket";

/**
 * Fields of the HTTP/1.1 handshake alone: not sent over HTTP/2 or HTTP/3
 * (RFC 8441 §5), never forwarded as such (the proxy makes its own key for an
 * HTTP/1.1 backend, or passes an HTTP/1.1 client's).
 */
export const H1_HANDSHAKE_FIELDS: ReadonlySet<string> = new Set([
  "sec-websocket-key",
  "sec-websocket-accept",
]);

/** The value of the first `name` field, or `undefined`. */
function fieldValue(fields: readonly FieldLine[], name: string): string | undefined {
  return fields.find(([n]) => n === name)?.[1];
}

/** Whether `key` is a valid `Sec-WebSocket-Key` (16 octets in base64, RFC 6455 §4.1). */
export function isWebSocketKey(key: string): boolean {
  return KEY.test(key);
}

/**
 * Whether an HTTP/1.1 request head asks for a WebSocket (RFC 6455 §4.2.1):
 * `Upgrade` names `websocket` (RFC 9110 §7.8) and `Connection` names
 * `upgrade`. Names are lowercase.
 */
export function asksWebSocketUpgrade(fields: readonly FieldLine[]): boolean {
  return fieldTokens(fields, "upgrade").includes(WEBSOCKET_PROTOCOL) &&
    fieldTokens(fields, "connection").includes("upgrade");
}

/**
 * Why an HTTP/1.1 WebSocket upgrade request is malformed (RFC 6455 §4.2.1:
 * GET, one valid `Sec-WebSocket-Key`, `Sec-WebSocket-Version`), or `null`.
 */
export function h1UpgradeRequestError(method: string, fields: readonly FieldLine[]): string | null {
  if (method !== "GET") return `a WebSocket upgrade must be a GET, not ${method} (RFC 6455 §4.1)`;
  const keys = fields.filter(([n]) => n === "sec-websocket-key");
  if (keys.length !== 1 || !isWebSocketKey(keys[0][1])) {
    return "a WebSocket upgrade needs one valid Sec-WebSocket-Key (RFC 6455 §4.2.1)";
  }
  if (fieldValue(fields, "sec-websocket-version") === undefined) {
    return "a WebSocket upgrade needs Sec-WebSocket-Version (RFC 6455 §4.2.1)";
  }
  return null;
}

/** A fresh `Sec-WebSocket-Key`: 16 random octets in base64 (RFC 6455 §4.1). */
export function newWebSocketKey(): string {
  const nonce = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...nonce));
}

/**
 * The `Sec-WebSocket-Accept` a server answers `key` with: base64 of the
 * SHA-1 of the key and the GUID (RFC 6455 §4.2.2).
 */
export async function websocketAccept(key: string): Promise<string> {
  const data = new TextEncoder().encode(key + GUID);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-1", data));
  return btoa(String.fromCharCode(...digest));
}

/**
 * Why a backend's `101 Switching Protocols` does not complete the HTTP/1.1
 * handshake of `key` (RFC 6455 §4.1, the client's checks 2-4), or `null`.
 * `upgrade` and `connection` are the tokens of those fields; `accept` the
 * `Sec-WebSocket-Accept` received.
 */
export async function switchError(
  key: string,
  upgrade: readonly string[],
  connection: readonly string[],
  accept: string | undefined,
): Promise<string | null> {
  if (!upgrade.includes(WEBSOCKET_PROTOCOL)) return "101 without Upgrade: websocket";
  if (!connection.includes("upgrade")) return "101 without Connection: upgrade";
  if (accept === undefined) return "101 without Sec-WebSocket-Accept";
  const expected = await websocketAccept(key);
  return accept === expected
    ? null
    : `101 with Sec-WebSocket-Accept ${JSON.stringify(accept.slice(0, 40))}, not the key's`;
}
