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

Deno.test("a flood from one address group sheds that group's own handshakes first", () => {
  const { table: t } = table({ maxHandshakesPerAddress: 2, maxHandshakes: 10 });
  const other = t.admit("other", "192.0.2.9");
  const a1 = t.admit("a1", "2001:db8:1:1::1");
  t.admit("a2", "2001:db8:1:1::2"); // same /64
  const a3 = t.admit("a3", "2001:db8:1:1::3");
  assert.deepEqual(a3.admitted && a3.shed.map((s) => [s.entry.handle, s.reason]), [[
    "a1",
    "address_handshakes",
  ]]);
  assert.equal(a1.admitted?.state, "gone");
  assert.equal(other.admitted?.state, "handshake");
});

Deno.test("a flood from one network (/24) sheds that network's own handshakes first", () => {
  const { table: t } = table({ maxHandshakesPerNetwork: 2, maxHandshakes: 10 });
  t.admit("n1", "198.51.100.1");
  t.admit("n2", "198.51.100.2");
  const n3 = t.admit("n3", "198.51.100.3");
  assert.deepEqual(n3.admitted && n3.shed.map((s) => s.reason), ["network_handshakes"]);
  const elsewhere = t.admit("x", "203.0.113.1");
  assert.deepEqual(elsewhere.admitted && elsewhere.shed, []);
});

Deno.test("max_connections_per_address: a group full of open connections turns the newcomer away", () => {
  const { table: t } = table({ maxPerAddress: 2 });
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
  const { table: t } = table({ maxPerAddress: 2 });
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
