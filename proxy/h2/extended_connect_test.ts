import assert from "node:assert/strict";
import { H2ClientConnection } from "./connection.ts";
import { H2Code } from "./errors.ts";
import { Flag, FrameType } from "./frames.ts";
import { PeerSettings, SettingId } from "./settings.ts";
import { frame, headers, parseFrames, settings } from "./_test_util.ts";

const CONNECT: Array<[string, string]> = [
  [":method", "CONNECT"],
  [":protocol", "websocket"],
  [":scheme", "http"],
  [":authority", "a"],
  [":path", "/chat"],
  ["sec-websocket-version", "13"],
];

function apply(peer: PeerSettings, pairs: Array<[number, number]>) {
  const p = new Uint8Array(pairs.length * 6);
  const v = new DataView(p.buffer);
  pairs.forEach(([id, value], i) => {
    v.setUint16(i * 6, id);
    v.setUint32(i * 6 + 2, value);
  });
  const r = peer.apply(p, 0, p.length);
  return typeof r === "number" ? null : r.code;
}

Deno.test("RFC 8441 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL is 0 or 1, and never back to 0", () => {
  const peer = new PeerSettings(100);
  assert.equal(peer.enableConnectProtocol, false);
  assert.equal(apply(peer, [[SettingId.ENABLE_CONNECT_PROTOCOL, 0]]), null);
  assert.equal(peer.enableConnectProtocol, false);
  assert.equal(apply(peer, [[SettingId.ENABLE_CONNECT_PROTOCOL, 1]]), null);
  assert.equal(peer.enableConnectProtocol, true);
  assert.equal(apply(peer, [[SettingId.ENABLE_CONNECT_PROTOCOL, 1]]), null);
  assert.equal(apply(peer, [[SettingId.ENABLE_CONNECT_PROTOCOL, 0]]), H2Code.PROTOCOL_ERROR);
  assert.equal(
    apply(new PeerSettings(100), [[SettingId.ENABLE_CONNECT_PROTOCOL, 2]]),
    H2Code.PROTOCOL_ERROR,
  );
});

Deno.test("RFC 8441 §4: no :protocol to a server that did not enable extended CONNECT", () => {
  const c = new H2ClientConnection();
  c.receive(settings());
  c.takeOutput();
  assert.equal(c.peerEnablesConnectProtocol, false);
  assert.deepEqual(c.openStream(CONNECT, { endStream: false }), {
    refused: "no-extended-connect",
  });
  assert.equal(c.takeOutput(), null, "nothing written");
  assert.equal(c.activeStreams, 0);
});

Deno.test("RFC 8441 §4-5: an extended CONNECT stream is a tunnel of DATA both ways", () => {
  const c = new H2ClientConnection();
  c.receive(settings([[SettingId.ENABLE_CONNECT_PROTOCOL, 1]]));
  c.takeOutput();
  assert.equal(c.peerEnablesConnectProtocol, true);
  const r = c.openStream(CONNECT, { endStream: false });
  assert.ok("id" in r);
  const sent = parseFrames(c.takeOutput()!);
  assert.equal(sent[0].type, FrameType.HEADERS);
  assert.equal(sent[0].flags & Flag.END_STREAM, 0, "the stream stays open for the tunnel");
  // The 200 opens the tunnel: DATA flows both ways, the stream still open.
  const ev = c.receive(headers(r.id, [[":status", "200"]]));
  assert.ok(ev.some((e) => e.type === "response" && e.status === 200 && !e.endStream));
  const data = c.receive(frame(FrameType.DATA, 0, r.id, [0x81, 0x01, 0x61]));
  assert.ok(data.some((e) => e.type === "data" && e.data.length === 3));
  assert.equal(c.sendData(r.id, new Uint8Array([0x82, 0x80, 1, 2, 3, 4]), false), 6);
  assert.ok(c.hasStream(r.id));
  // Our END_STREAM and the server's end the tunnel cleanly.
  assert.equal(c.sendData(r.id, new Uint8Array(0), true), 0);
  const end = c.receive(frame(FrameType.DATA, Flag.END_STREAM, r.id, []));
  assert.ok(end.some((e) => e.type === "data" && e.endStream));
  assert.equal(c.hasStream(r.id), false);
});
