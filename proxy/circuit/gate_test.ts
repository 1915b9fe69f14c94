import assert from "node:assert/strict";
import type { BackendRef } from "../balancer/mod.ts";
import { PoolGate } from "./gate.ts";

const a: BackendRef = { id: "a", address: "127.0.0.1:1", weight: 100 };
const b: BackendRef = { id: "b", address: "127.0.0.1:2", weight: 100 };
const live = () => new AbortController().signal;

Deno.test("#30.2: max_inflight: a full backend passes the attempt to the next candidate with room", () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 2 }, { id: "b", max_inflight: 1 }], 0);
  assert.deepEqual(
    [0, 1, 2].map(() => gate.admit([a, b], 0, live(), 1000)),
    [0, 0, 1],
    "a, a, then b",
  );
  assert.equal(gate.admit([a, b], 0, live(), 1000), -1, "both full, no queue: refused at once");
  assert.deepEqual([gate.inflight("a"), gate.inflight("b")], [2, 1]);
  assert.deepEqual(gate.refused("a"), { max_inflight: 1, max_pending: 0 });
  // A failure frees its slot as an answer does.
  gate.ended("a", 5, "connect");
  assert.equal(gate.inflight("a"), 1);
  assert.equal(gate.admit([a, b], 0, live(), 1000), 0);
});

Deno.test("#30.2: max_pending: past the queue, refused at once; a freed slot goes to the longest waiting", async () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 1 }], 2);
  assert.equal(gate.admit([a], 0, live(), 10_000), 0);
  const first = gate.admit([a], 0, live(), 10_000);
  const second = gate.admit([a], 0, live(), 10_000);
  assert.ok(first instanceof Promise && second instanceof Promise);
  assert.equal(gate.pending, 2);
  assert.equal(gate.admit([a], 0, live(), 10_000), -1, "the queue is full: never unbounded");
  assert.deepEqual(gate.refused("a"), { max_inflight: 0, max_pending: 1 });
  gate.ended("a", 3, "answered");
  assert.equal(await first, 0);
  assert.equal(gate.inflight("a"), 1, "the slot went straight to the waiter");
  assert.equal(gate.pending, 1);
  gate.ended("a", 3, "answered");
  assert.equal(await second, 0);
  assert.equal(gate.pending, 0);
});

Deno.test("#30.2: max_pending: a wait ends at its deadline (refused) or when the client leaves (not counted)", async () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 1 }], 5);
  gate.admit([a], 0, live(), 1000);
  assert.equal(await gate.admit([a], 0, live(), 20), -1);
  assert.deepEqual(gate.refused("a"), { max_inflight: 1, max_pending: 0 });
  const client = new AbortController();
  const waiting = gate.admit([a], 0, client.signal, 60_000);
  client.abort();
  assert.equal(await waiting, -1);
  assert.equal(gate.pending, 0);
  assert.deepEqual(gate.refused("a"), { max_inflight: 1, max_pending: 0 });
  gate.ended("a", 1, "answered");
  assert.equal(gate.inflight("a"), 0, "nobody waits: the slot is free");
});

Deno.test("#30.2: a waiter takes a freed slot of any of its candidates, first come first served among those", async () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 1 }, { id: "b", max_inflight: 1 }], 4);
  gate.admit([a, b], 0, live(), 1000);
  gate.admit([a, b], 0, live(), 1000);
  const onlyA = gate.admit([a], 0, live(), 10_000) as Promise<number>;
  const either = gate.admit([b, a], 0, live(), 10_000) as Promise<number>;
  gate.ended("b", 1, "answered");
  assert.equal(await either, 0, "b freed: the waiter that can use it, at b's index");
  gate.ended("a", 1, "answered");
  assert.equal(await onlyA, 0);
});

Deno.test("#30.3: the gate feeds the load table: in flight, and response times of answers and failures", () => {
  let clock = 0;
  const gate = new PoolGate(() => clock);
  gate.configure([{ id: "a" }, { id: "b" }], 0);
  assert.equal(gate.admit([a, b], 1, live(), 0), 1, "no limits: the attempt's own candidate");
  assert.equal(gate.inflight("b"), 1);
  clock = 40;
  gate.ended("b", 40, "answered");
  assert.equal(gate.table.of("b").estimate(40), 40);
  gate.admit([a, b], 1, live(), 0);
  gate.ended("b", 1, "answered_5xx");
  assert.equal(gate.table.of("b").estimate(40), 80, "a 5xx counts as twice the estimate");
  gate.admit([a, b], 0, live(), 0);
  gate.ended("a", 1, "client_gone");
  assert.equal(gate.table.of("a").measured, false, "a client that left says nothing of a");
  assert.equal(gate.inflight("a"), 0);
});

Deno.test("#30.2: a reload reconfigures the limits and keeps the counts of attempts still in flight", () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 1 }], 0);
  gate.admit([a], 0, live(), 0);
  gate.configure([{ id: "a", max_inflight: 2 }, { id: "b" }], 0);
  assert.equal(gate.inflight("a"), 1);
  assert.equal(gate.admit([a], 0, live(), 0), 0, "the raised limit applies at once");
  assert.equal(gate.admit([a], 0, live(), 0), -1);
  gate.ended("a", 1, "answered");
  gate.ended("a", 1, "answered");
  assert.equal(gate.inflight("a"), 0);
});

Deno.test("#30.2: an answered attempt keeps its slot until released, and a release frees it once only", () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 2 }], 0);
  gate.admit([a], 0, live(), 0);
  gate.admit([a], 0, live(), 0);
  const first = gate.answered("a", 5, "answered");
  const second = gate.answered("a", 5, "answered");
  assert.equal(gate.inflight("a"), 2, "answered, the bodies still streaming: both slots taken");
  assert.equal(gate.admit([a], 0, live(), 0), -1, "full until a body is done");
  first();
  first();
  first();
  assert.equal(gate.inflight("a"), 1, "released three times, freed once");
  assert.equal(gate.admit([a], 0, live(), 0), 0);
  gate.ended("a", 1, "answered");
  second();
  second();
  assert.equal(gate.inflight("a"), 0);
});

Deno.test("#30.2: a slot released at the end of a body goes to the longest waiting request", async () => {
  const gate = new PoolGate();
  gate.configure([{ id: "a", max_inflight: 1 }], 1);
  gate.admit([a], 0, live(), 0);
  const release = gate.answered("a", 5, "answered");
  const waiting = gate.admit([a], 0, live(), 10_000);
  assert.ok(waiting instanceof Promise);
  release();
  assert.equal(await waiting, 0, "the waiter took the freed slot");
  assert.equal(gate.inflight("a"), 1);
  release();
  assert.equal(gate.inflight("a"), 1, "a second release does not free the waiter's slot");
});

Deno.test("#30.3: the response time is taken at the head; the body's time is not", () => {
  let clock = 0;
  const gate = new PoolGate(() => clock);
  gate.configure([{ id: "a" }], 0);
  gate.admit([a], 0, live(), 0);
  const release = gate.answered("a", 20, "answered");
  assert.equal(gate.table.of("a").estimate(clock), 20, "observed at the head");
  assert.equal(gate.table.of("a").inflight, 1, "still in flight while the body streams");
  clock = 5_000;
  release();
  assert.equal(gate.table.of("a").inflight, 0);
  assert.ok(gate.table.of("a").estimate(clock) < 20, "the long body added no response time");
});
