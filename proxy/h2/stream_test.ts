import assert from "node:assert/strict";
import { H2Stream, nextState, type StreamEvent, type StreamState } from "./stream.ts";

const STATES: StreamState[] = [
  "idle",
  "open",
  "half-closed (local)",
  "half-closed (remote)",
  "closed",
];
const EVENTS: StreamEvent[] = ["send headers", "send end", "recv end", "reset"];

Deno.test("#28.3: RFC 9113 §5.1: the client's stream states and their transitions", () => {
  const allowed: Record<string, StreamState> = {
    "idle/send headers": "open",
    "open/send end": "half-closed (local)",
    "open/recv end": "half-closed (remote)",
    "open/reset": "closed",
    "half-closed (local)/recv end": "closed",
    "half-closed (local)/reset": "closed",
    "half-closed (remote)/send end": "closed",
    "half-closed (remote)/reset": "closed",
  };
  for (const state of STATES) {
    for (const event of EVENTS) {
      const want = allowed[`${state}/${event}`];
      if (want === undefined) assert.throws(() => nextState(state, event), `${state}/${event}`);
      else assert.equal(nextState(state, event), want, `${state}/${event}`);
    }
  }
});

Deno.test("#28.3: a stream opens with its request HEADERS, half-closed (local) when they end it", () => {
  const windows = { sendWindow: 10, recvWindow: 20, head: false };
  const open = new H2Stream(1, { ...windows, endStream: false });
  assert.equal(open.state, "open");
  assert.ok(open.canSend && open.canReceive);
  open.receiveEnd();
  assert.equal(open.state, "half-closed (remote)");
  assert.ok(open.canSend && !open.canReceive);
  open.sendEnd();
  assert.ok(open.closed);
  const sent = new H2Stream(3, { ...windows, endStream: true });
  assert.equal(sent.state, "half-closed (local)");
  assert.ok(!sent.canSend && sent.canReceive);
  sent.reset();
  assert.ok(sent.closed);
});

Deno.test("RFC 9113 §8.1.1: a body is checked against the head's content-length", () => {
  const s = new H2Stream(1, { sendWindow: 0, recvWindow: 0, head: false, endStream: true });
  s.contentLength = 5;
  assert.equal(s.bodyError(3, false), null);
  assert.ok(s.shortOfLength);
  assert.match(s.bodyError(1, true)!, /shorter/);
  const long = new H2Stream(3, { sendWindow: 0, recvWindow: 0, head: false, endStream: true });
  long.contentLength = 1;
  assert.match(long.bodyError(2, false)!, /longer/);
  const head = new H2Stream(5, { sendWindow: 0, recvWindow: 0, head: true, endStream: true });
  head.contentLength = 100;
  assert.equal(head.bodyError(0, true), null, "a HEAD response's declared length is no body");
  assert.match(head.bodyError(1, true)!, /has none/);
});
