import assert from "node:assert/strict";
import { type AdmissionLimits, AdmissionTable, DEFAULT_ADMISSION_LIMITS } from "./admission.ts";

function table(over: Partial<AdmissionLimits> = {}) {
  let t = 0;
  const clock = { advance: (ms: number) => (t += ms) };
  const limits = { ...DEFAULT_ADMISSION_LIMITS, ...over };
  return { table: new AdmissionTable<string>(limits, () => t), clock };
}

Deno.test("a full handshake table sheds its oldest unfinished handshake, never the newcomer", () => {
  const { table: t } = table({ maxHandshakes: 3, maxHandshakesPerNetwork: 99 });
  const spoofed = ["10.0.0.1", "10.1.0.1", "10.2.0.1"].map((a) => t.admit(`s-${a}`, a));
  assert.ok(spoofed.every((r) => r.admitted && r.shed.length === 0));
  const legit = t.admit("legit", "192.0.2.1");
  assert.ok(legit.admitted);
  assert.deepEqual(legit.shed.map((s) => [s.entry.handle, s.reason]), [[
    "s-10.0.0.1",
    "handshakes",
  ]]);
  assert.equal(t.handshakes, 3);
  // The legitimate client completes in one round trip, before 3 more arrive.
  assert.equal(t.established(legit.admitted), true);
  const next = t.admit("s2", "10.3.0.1");
  assert.equal(next.admitted !== undefined, true);
  assert.equal(t.connections, 1);
});

Deno.test("a shed handshake that completes later is not served", () => {
  const { table: t } = table({ maxHandshakes: 1 });
  const first = t.admit("a", "10.0.0.1");
  t.admit("b", "10.9.0.1");
  assert.ok(first.admitted);
  assert.equal(t.established(first.admitted), false);
  assert.equal(t.connections, 0);
});

Deno.test("#35.7: with the table full, a flood from one address group sheds that group's own handshakes first", () => {
  const { table: t } = table({ maxHandshakesPerAddress: 2, maxHandshakes: 4 });
  const other = t.admit("other", "192.0.2.9");
  const a1 = t.admit("a1", "2001:db8:1:1::1");
  t.admit("a2", "2001:db8:1:1::2"); // same /64
  // Room in the table: the group may go past its cap.
  const a3 = t.admit("a3", "2001:db8:1:1::3");
  assert.deepEqual(a3.admitted && a3.shed, []);
  // Full: the newcomer's own group, over its cap, gives up its oldest.
  const a4 = t.admit("a4", "2001:db8:1:1::4");
  assert.deepEqual(a4.admitted && a4.shed.map((s) => [s.entry.handle, s.reason]), [[
    "a1",
    "address_handshakes",
  ]]);
  assert.equal(a1.admitted?.state, "gone");
  assert.equal(other.admitted?.state, "handshake");
});

Deno.test("#35.7: with the table full, a flood from one network (/24) sheds that network's own handshakes, also for a newcomer from elsewhere", () => {
  const { table: t } = table({ maxHandshakesPerNetwork: 2, maxHandshakes: 4 });
  const elsewhere = t.admit("x", "203.0.113.1");
  for (const i of [1, 2, 3]) t.admit(`n${i}`, `198.51.100.${i}`);
  const n4 = t.admit("n4", "198.51.100.4");
  assert.deepEqual(n4.admitted && n4.shed.map((s) => [s.entry.handle, s.reason]), [[
    "n1",
    "network_handshakes",
  ]]);
  // A newcomer from another network does not shed the older handshake of
  // `elsewhere` (the oldest of all): the network over its cap pays.
  const y = t.admit("y", "192.0.2.77");
  assert.deepEqual(y.admitted && y.shed.map((s) => [s.entry.handle, s.reason]), [[
    "n2",
    "network_handshakes",
  ]]);
  assert.equal(elsewhere.admitted?.state, "handshake");
});

Deno.test("#35.7: 200 simultaneous handshakes from one address are all admitted with the default limits", () => {
  const { table: t } = table();
  const entries = Array.from({ length: 200 }, (_, i) => t.admit(`c${i}`, "192.0.2.1"));
  assert.ok(entries.every((r) => r.admitted && r.shed.length === 0));
  // ...and all of them may complete and stay open together.
  for (const r of entries) assert.equal(t.established(r.admitted!), true);
  assert.equal(t.connections, 200);
  const more = t.admit("c200", "192.0.2.1");
  assert.deepEqual(more.admitted && more.shed, []);
});

Deno.test("#35.7: with the table full, a group whose handshakes complete keeps its room past its cap; one whose handshakes fail does not", () => {
  const { table: t } = table({ maxHandshakes: 8, maxHandshakesPerAddress: 2 });
  // The legitimate group completes handshakes: trusted.
  for (const i of [1, 2]) t.established(t.admit(`done${i}`, "192.0.2.1").admitted!);
  const legit = [1, 2, 3, 4].map((i) => t.admit(`legit${i}`, "192.0.2.1"));
  const spoofed = [1, 2, 3, 4].map((i) => t.admit(`spoof${i}`, "198.51.100.9"));
  assert.equal(t.handshakes, 8);
  // A legitimate newcomer: its group is over its cap but trusted; the
  // spoofing group (over its cap, never completing) pays.
  const l5 = t.admit("legit5", "192.0.2.1");
  assert.deepEqual(l5.admitted && l5.shed.map((s) => [s.entry.handle, s.reason]), [[
    "spoof1",
    "address_handshakes",
  ]]);
  assert.ok(legit.every((r) => r.admitted?.state === "handshake"));
  assert.equal(spoofed[0].admitted?.state, "gone");
});

Deno.test("#35.7: a flood from the client's own address makes the group untrusted: it sheds its own handshakes", () => {
  const { table: t } = table({ maxHandshakes: 4, maxHandshakesPerAddress: 2 });
  t.established(t.admit("done", "192.0.2.1").admitted!); // trusted: 1 completed
  const other = t.admit("other", "203.0.113.5");
  const flood = [1, 2, 3].map((i) => t.admit(`f${i}`, "192.0.2.1"));
  // Full, but the group is trusted still: the oldest of all goes.
  const f4 = t.admit("f4", "192.0.2.1");
  assert.deepEqual(f4.admitted && f4.shed.map((s) => [s.entry.handle, s.reason]), [[
    "other",
    "handshakes",
  ]]);
  // Two spoofed handshakes of the group end without completing: 2 failed, 1 completed.
  t.closed(flood[0].admitted!);
  t.closed(flood[1].admitted!);
  t.admit("f5", "192.0.2.1");
  t.admit("f6", "192.0.2.1");
  // Full again: a newcomer from elsewhere sheds the untrusted group's oldest.
  const x = t.admit("x", "203.0.113.6");
  assert.deepEqual(x.admitted && x.shed.map((s) => [s.entry.handle, s.reason]), [[
    "f3",
    "address_handshakes",
  ]]);
  assert.equal(other.admitted?.state, "gone");
});

Deno.test("#35.7: below half the connection table, a group may hold more than max_connections_per_address", () => {
  const { table: t } = table({ maxPerAddress: 2, maxConnections: 10 });
  for (let i = 0; i < 4; i++) {
    const r = t.admit(`c${i}`, "192.0.2.1");
    assert.ok(r.admitted && r.shed.length === 0, `c${i}`);
    t.established(r.admitted);
  }
  // Now 4 of 10: one more makes half, and the cap applies from then on.
  t.established(t.admit("c4", "192.0.2.1").admitted!);
  assert.deepEqual(t.admit("c5", "192.0.2.1"), { admitted: undefined, reason: "per_address" });
  assert.ok(t.admit("d0", "192.0.2.2").admitted, "another group still gets in");
});

Deno.test("max_connections_per_address: a group full of open connections turns the newcomer away", () => {
  const { table: t } = table({ maxPerAddress: 2, maxConnections: 4 });
  for (const h of ["c1", "c2"]) {
    const r = t.admit(h, "2001:db8::1");
    assert.ok(r.admitted);
    t.established(r.admitted);
  }
  // Another address of the same /64 counts against the same cap (issue #25 item 7).
  const r = t.admit("c3", "2001:db8::ffff");
  assert.deepEqual(r, { admitted: undefined, reason: "per_address" });
  assert.ok(t.admit("c4", "2001:db8:0:1::1").admitted);
});

Deno.test("max_connections_per_address: a group at its cap with a handshake pending sheds that one", () => {
  const { table: t } = table({ maxPerAddress: 2, maxConnections: 2 });
  const open = t.admit("open", "192.0.2.1");
  assert.ok(open.admitted);
  t.established(open.admitted);
  t.admit("pending", "192.0.2.1");
  const r = t.admit("new", "192.0.2.1");
  assert.deepEqual(r.admitted && r.shed.map((s) => [s.entry.handle, s.reason]), [[
    "pending",
    "per_address",
  ]]);
});

Deno.test("max_connections: newcomers are refused unseen once the connection table is full", () => {
  const { table: t } = table({ maxConnections: 1 });
  assert.equal(t.refuseUnseen(), undefined);
  const r = t.admit("c", "192.0.2.1");
  assert.ok(r.admitted);
  t.established(r.admitted);
  assert.equal(t.refuseUnseen(), "connections");
  t.closed(r.admitted);
  assert.equal(t.refuseUnseen(), undefined);
  assert.equal(t.connections, 0);
});

Deno.test("the handshake deadline shortens as the table fills, to a tenth when full", () => {
  const { table: t, clock } = table({ maxHandshakes: 10, handshakeTimeoutMs: 1000 });
  assert.equal(t.deadlineMs(), 1000);
  for (let i = 0; i < 5; i++) t.admit(`h${i}`, `10.${i}.0.1`);
  assert.equal(t.deadlineMs(), 1000); // half full
  for (let i = 5; i < 10; i++) t.admit(`h${i}`, `10.${i}.0.1`);
  assert.equal(t.deadlineMs(), 100);
  clock.advance(150);
  const shed = t.sweep();
  // Shedding frees the table and lengthens the deadline again: not everyone goes.
  assert.ok(shed.length > 0 && shed.length < 10, `shed ${shed.length}`);
  assert.ok(shed.every((s) => s.reason === "handshake_timeout"));
  assert.equal(t.handshakes, 10 - shed.length);
});

Deno.test("sweep sheds only handshakes past their deadline, oldest first", () => {
  const { table: t, clock } = table({ handshakeTimeoutMs: 1000 });
  t.admit("old", "192.0.2.1");
  clock.advance(600);
  const young = t.admit("young", "192.0.2.2");
  clock.advance(500);
  assert.deepEqual(t.sweep().map((s) => s.entry.handle), ["old"]);
  assert.equal(young.admitted?.state, "handshake");
  assert.deepEqual(t.sweep(), []);
});

Deno.test("closing releases every count; a closed entry stays released", () => {
  const { table: t } = table({ maxPerAddress: 1 });
  const r = t.admit("a", "192.0.2.1");
  assert.ok(r.admitted);
  t.closed(r.admitted);
  t.closed(r.admitted);
  assert.equal(t.handshakes, 0);
  assert.ok(t.admit("b", "192.0.2.1").admitted);
});

Deno.test("past the handshake rate newcomers are turned away unseen, and the budget refills with time", () => {
  const { table: t, clock } = table({ maxHandshakeRate: 300, maxHandshakes: 256 });
  let allowed = 0;
  for (let i = 0; i < 1000; i++) if (t.refuseUnseen() === undefined) allowed++;
  assert.equal(allowed, 300); // one second's worth
  assert.equal(t.refuseUnseen(), "handshake_rate");
  clock.advance(100);
  allowed = 0;
  for (let i = 0; i < 1000; i++) if (t.refuseUnseen() === undefined) allowed++;
  assert.equal(allowed, 30);
});
