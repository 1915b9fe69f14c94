import assert from "node:assert/strict";
import { ConnectionReceiveFlow, MAX_WINDOW, ReceiveWindow, SendWindow } from "./flow_control.ts";

Deno.test("RFC 9113 §6.9.1: a send window grows to 2^31-1 and no further", () => {
  const w = new SendWindow(65_535);
  assert.equal(w.grow(MAX_WINDOW - 65_535), true);
  assert.equal(w.size, MAX_WINDOW);
  assert.equal(w.grow(1), false);
  const shrunk = new SendWindow(10);
  assert.equal(shrunk.grow(-20), true, "SETTINGS may shrink it below zero (§6.9.2)");
  assert.equal(shrunk.size, -10);
});

Deno.test("RFC 9113 §6.9: a receive window is overrun past its size, and returns credit by halves", () => {
  const w = new ReceiveWindow(100);
  assert.equal(w.receive(100), true);
  assert.equal(w.release(49), 0);
  assert.equal(w.release(1), 50, "half the window owed: one WINDOW_UPDATE");
  assert.equal(w.receive(50), true);
  assert.equal(w.receive(1), false, "past the credit granted");
});

Deno.test("#32.2: the connection's credit returns on arrival, or as the readers take", () => {
  const arrival = new ConnectionReceiveFlow(100, "on-arrival");
  assert.equal(arrival.deliver(1, 60), 60);
  assert.equal(arrival.consume(1, 60), 0, "already returned");
  assert.equal(arrival.held, 0);
  const consume = new ConnectionReceiveFlow(100, "on-consume");
  assert.equal(consume.receive(100), true);
  assert.equal(consume.deliver(1, 40), 0);
  assert.equal(consume.deliver(3, 40), 0);
  assert.equal(consume.discard(20), 0, "padding returns at once (not yet half)");
  assert.equal(consume.held, 80);
  assert.equal(consume.receive(1), false, "the readers hold the window: an overrun");
  assert.equal(consume.consume(1, 30), 50);
  assert.equal(consume.drop(1), 0);
  assert.equal(consume.drop(3), 50);
  assert.equal(consume.held, 0);
  assert.equal(consume.consume(3, 10), 0, "nothing held: no credit");
});
