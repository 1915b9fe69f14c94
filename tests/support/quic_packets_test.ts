import assert from "node:assert/strict";
import { quicPacketTypes } from "./quic_packets.ts";

/** A QUIC v1 long header packet (RFC 9000 §17.2) with a `payload`-byte body. */
function longPacket(type: number, payload: number, token = 0): number[] {
  const head = [0xc0 | (type << 4), 0, 0, 0, 1, 4, 1, 2, 3, 4, 2, 5, 6];
  const tokenPart = type === 0 ? [token, ...new Array(token).fill(7)] : [];
  // Length as a 2-byte varint (0x40 prefix).
  return [...head, ...tokenPart, 0x40 | (payload >> 8), payload & 0xff, ...new Array(payload)];
}

Deno.test("quicPacketTypes: coalesced long header packets (RFC 9000 §12.2), then a short header one", () => {
  const first = new Uint8Array([...longPacket(0, 40, 3), ...longPacket(1, 100)]);
  assert.deepEqual(quicPacketTypes(first), ["initial", "0rtt"]);
  const second = new Uint8Array([...longPacket(0, 20), ...longPacket(2, 30), 0x40, 1, 2, 3]);
  assert.deepEqual(quicPacketTypes(second), ["initial", "handshake", "1rtt"]);
  assert.deepEqual(quicPacketTypes(new Uint8Array([0x41, 9, 9])), ["1rtt"]);
});

Deno.test("quicPacketTypes: another version and a truncated packet end the walk", () => {
  assert.deepEqual(quicPacketTypes(new Uint8Array([0xc0, 0, 0, 0, 2, 0, 0])), ["other"]);
  const truncated = longPacket(2, 50).slice(0, 30);
  assert.deepEqual(quicPacketTypes(new Uint8Array(truncated)), ["handshake"]);
});
