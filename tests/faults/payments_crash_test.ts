/**
 * Fault test (issue #8) for the payments sandbox: SIGKILL the server process
 * while 1,000 charge creations are in flight, restart it on the same Deno KV
 * file, and find every acknowledged (2xx) charge again; then concurrent
 * partial refunds never add up to more than the captured amount.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { spawnServer } from "../payments/_server_process.ts";
import { sleep, withTimeout } from "../support/wait.ts";

const TOKEN = "fault-token";
const CHARGES = 1000;
/** Kill the server once this many charges were acknowledged (or after KILL_AFTER_MS). */
const KILL_AFTER_ACKS = 250;
const KILL_AFTER_MS = 10_000;

function chargeBody(amount: string, capture: boolean): string {
  return JSON.stringify({
    amount,
    currency: "USD",
    capture,
    card: { number: "4111111111111111", expMonth: 12, expYear: 2035, cvc: "123", name: "Fault" },
  });
}

interface Ack {
  requestId: string;
  id: string;
  amount: string;
}

Deno.test("faults: payments killed during 1,000 concurrent charges keeps every acknowledged charge", async () => {
  const dir = await Deno.makeTempDir({ prefix: "spooky-pay-fault-" });
  const kv = `${dir}/payments.kv`;
  const args = ["--port", "0", "--kv", kv, "--token", TOKEN, "--log-level", "error"];
  const client = Deno.createHttpClient({});
  let server = await spawnServer(args);
  try {
    const headers = (requestId: string) => ({
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "request-id": requestId,
    });
    const acks: Ack[] = [];
    let failed = 0;
    const statuses = new Map<number, number>();
    const enough = Promise.withResolvers<void>();
    const base = `${server.url}/vendor/v4`;
    const creations = Array.from({ length: CHARGES }, async (_, i) => {
      const requestId = `fault-${i}`;
      const amount = `${1 + (i % 90)}.${String(i % 100).padStart(2, "0")}`;
      try {
        const res = await fetch(`${base}/payments/charges`, {
          method: "POST",
          headers: headers(requestId),
          body: chargeBody(amount, true),
          client,
          signal: AbortSignal.timeout(30_000),
        });
        const body = await res.json();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 200 && res.status < 300) {
          acks.push({ requestId, id: body.id, amount: body.amount });
          if (acks.length >= KILL_AFTER_ACKS) enough.resolve();
        }
      } catch {
        failed++; // the server died under this request: not acknowledged
      }
    });
    await Promise.race([enough.promise, sleep(KILL_AFTER_MS)]);
    await server.kill();
    await withTimeout(Promise.all(creations), 40_000, "charge creations after the kill");
    console.log(
      `payments SIGKILL: ${acks.length} acknowledged, ${failed} cut off, statuses ${
        JSON.stringify(Object.fromEntries(statuses))
      }`,
    );
    assert.ok(acks.length >= 1, "some charges were acknowledged before the kill");
    for (const [status] of statuses) assert.ok(status === 201, `unexpected status ${status}`);

    server = await spawnServer(args);
    const base2 = `${server.url}/vendor/v4`;
    // Every acknowledged charge is there, unchanged; a retry with its
    // Request-Id replays the same charge instead of charging twice.
    const missing: string[] = [];
    for (let i = 0; i < acks.length; i += 50) {
      await Promise.all(
        acks.slice(i, i + 50).map(async (a) => {
          const res = await fetch(`${base2}/payments/charges/${a.id}`, {
            headers: headers(`get-${a.id}`),
            client,
          });
          const body = await res.json();
          if (res.status !== 200 || body.amount !== a.amount || body.status !== "CAPTURED") {
            missing.push(`${a.id}: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
          }
          const replay = await fetch(`${base2}/payments/charges`, {
            method: "POST",
            headers: headers(a.requestId),
            body: chargeBody(a.amount, true),
            client,
          });
          const again = await replay.json();
          if (replay.status !== 201 || again.id !== a.id) {
            missing.push(`${a.requestId} replay: ${replay.status} ${again.id} != ${a.id}`);
          }
        }),
      );
    }
    assert.deepEqual(missing, [], "acknowledged charges survive the crash");

    // Concurrent partial refunds of one captured charge never exceed it.
    const charge = await (await fetch(`${base2}/payments/charges`, {
      method: "POST",
      headers: headers("refund-target"),
      body: chargeBody("10.00", true),
      client,
    })).json();
    const refunds = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const res = await fetch(`${base2}/payments/charges/${charge.id}/refunds`, {
        method: "POST",
        headers: headers(`refund-${i}`),
        body: JSON.stringify({ amount: "0.75" }),
        client,
      });
      const body = await res.json();
      return { status: res.status, amount: body.amount as string | undefined };
    }));
    const ok = refunds.filter((r) => r.status === 201);
    const cents = ok.reduce((n, r) => n + Math.round(Number(r.amount) * 100), 0);
    console.log(
      `40 concurrent refunds of 0.75 on 10.00: ${ok.length} succeeded (${
        (cents / 100).toFixed(2)
      }), others ${[...new Set(refunds.filter((r) => r.status !== 201).map((r) => r.status))]}`,
    );
    assert.ok(cents <= 1000, `refunds total ${cents} cents > 1000`);
    assert.ok(ok.length <= 13, "at most floor(10.00 / 0.75) refunds fit");
    for (const r of refunds) assert.ok([201, 400, 503].includes(r.status), `status ${r.status}`);
    // The books balance: a final refund of "the rest" is exactly what is left.
    const rest = await fetch(`${base2}/payments/charges/${charge.id}/refunds`, {
      method: "POST",
      headers: headers("refund-rest"),
      body: "{}",
      client,
    });
    const restBody = await rest.json();
    assert.equal(rest.status, 201, JSON.stringify(restBody));
    assert.equal(cents + Math.round(Number(restBody.amount) * 100), 1000);
    const final = await (await fetch(`${base2}/payments/charges/${charge.id}`, {
      headers: headers("final"),
      client,
    })).json();
    assert.equal(final.status, "REFUNDED");
  } finally {
    await server.kill();
    client.close();
    await Deno.remove(dir, { recursive: true });
  }
});
