/**
 * End-to-end over KV Connect: real `payments/main.ts` processes with
 * `--kv http://…`, storing through Deno's built-in KV Connect client into the
 * in-memory KV Connect server of `tests/support/kv_connect_server.ts`.
 */
import assert from "node:assert/strict";
import { startKvConnectServer } from "../support/kv_connect_server.ts";
import { apiCaller, type ServerProcess, spawnServer } from "./_server_process.ts";

const TOKEN = "kv-connect-e2e-token";
const KV_TOKEN = "kv-connect-access-token";
const CARD = { number: "4012888888881881", expMonth: 11, expYear: 2039, cvc: "987", name: "E2E" };

const call = apiCaller(TOKEN);

Deno.test("payments over KV Connect: charge lifecycle, replay, and a second process sharing the store", async () => {
  const kvServer = startKvConnectServer({ token: KV_TOKEN });
  const args = ["--port", "0", "--kv", kvServer.url, "--token", TOKEN];
  const env = { DENO_KV_ACCESS_TOKEN: KV_TOKEN };
  const procs: ServerProcess[] = [];
  const client = Deno.createHttpClient({});
  let statuses: Deno.CommandStatus[] = [];
  try {
    const a = await spawnServer(args, env);
    procs.push(a);
    const rid = `kvc-${crypto.randomUUID()}`;
    const input = { amount: "25.00", currency: "USD", card: CARD, capture: false };
    const created = await call(client, a.url, "POST", "payments/charges", input, {
      "Request-Id": rid,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.status, "AUTHORIZED");
    const id = created.body.id;
    const path = `payments/charges/${id}`;

    const got = await call(client, a.url, "GET", path);
    assert.equal(got.status, 200);
    assert.equal(got.body.id, id);
    assert.equal(got.body.status, "AUTHORIZED");

    const captured = await call(client, a.url, "POST", `${path}/capture`, {});
    assert.equal(captured.status, 200, JSON.stringify(captured.body));
    assert.equal(captured.body.status, "CAPTURED");

    const refund = await call(client, a.url, "POST", `${path}/refunds`, { amount: "10.00" });
    assert.equal(refund.status, 201, JSON.stringify(refund.body));
    const refunded = await call(client, a.url, "GET", path);
    assert.equal(refunded.body.status, "CAPTURED"); // partly refunded
    assert.equal(refunded.body.refundedAmount, "10.00");

    // the same Request-Id replays the original response
    const again = await call(client, a.url, "POST", "payments/charges", input, {
      "Request-Id": rid,
    });
    assert.equal(again.status, 201);
    assert.equal(again.body.id, id);
    assert.deepEqual(again.body, created.body);
    assert.equal(again.headers.get("idempotent-replayed"), "true");

    // the changes went through the KV Connect server
    const commitsSoFar = kvServer.stats.commits;
    assert.ok(commitsSoFar >= 3, `commits: ${commitsSoFar}`); // create, capture, refund
    assert.ok(kvServer.keyCount() > 0);

    // a second process on the same store reads the first one's changes at once
    const b = await spawnServer(args, env);
    procs.push(b);
    const seenByB = await call(client, b.url, "GET", path);
    assert.equal(seenByB.status, 200);
    assert.deepEqual(seenByB.body, (await call(client, a.url, "GET", path)).body);
    assert.equal(seenByB.body.refundedAmount, "10.00");

    // a void through one process is seen through the other
    const rid2 = `kvc-void-${crypto.randomUUID()}`;
    const second = await call(client, b.url, "POST", "payments/charges", {
      amount: "3.00",
      currency: "USD",
      card: CARD,
      capture: false,
    }, { "Request-Id": rid2 });
    assert.equal(second.status, 201);
    const secondPath = `payments/charges/${second.body.id}`;
    assert.equal((await call(client, a.url, "GET", secondPath)).body.status, "AUTHORIZED");
    const voidPath = `payments/txn-requests/${rid2}/void`;
    const voidRid = `kvc-void-req-${crypto.randomUUID()}`;
    const voided = await call(client, a.url, "POST", voidPath, {}, { "Request-Id": voidRid });
    assert.equal(voided.status, 201, JSON.stringify(voided.body));
    assert.equal((await call(client, b.url, "GET", secondPath)).body.status, "CANCELLED");
    assert.equal((await call(client, a.url, "GET", secondPath)).body.status, "CANCELLED");
    // the other process replays the void for its Request-Id
    const voidAgain = await call(client, b.url, "POST", voidPath, {}, { "Request-Id": voidRid });
    assert.equal(voidAgain.status, 201);
    assert.deepEqual(voidAgain.body, voided.body);
    assert.equal(voidAgain.headers.get("idempotent-replayed"), "true");

    assert.ok(kvServer.stats.commits > commitsSoFar);
    assert.deepEqual(kvServer.internalErrors, []);
  } finally {
    client.close();
    statuses = await Promise.all(procs.map((p) => p.stop()));
    await kvServer.close();
  }
  // both processes shut down cleanly (closing their KV Connect handle)
  assert.deepEqual(statuses.map((s) => s.code), [0, 0]);
});

Deno.test("payments over KV Connect: concurrent requests on two processes keep their guarantees", async () => {
  const kvServer = startKvConnectServer({ token: KV_TOKEN });
  const args = ["--port", "0", "--kv", kvServer.url, "--token", TOKEN];
  const env = { DENO_KV_ACCESS_TOKEN: KV_TOKEN };
  const procs: ServerProcess[] = [];
  const client = Deno.createHttpClient({});
  try {
    for (let i = 0; i < 2; i++) procs.push(await spawnServer(args, env));
    const [a, b] = procs;
    // 40 charges at once, each Request-Id sent twice (once per process):
    // many changes share commits, and duplicates race on their idempotency key.
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const headers: Record<string, string> = { "Request-Id": `burst-${i >> 1}` };
        return call(client, i % 2 ? a.url : b.url, "POST", "payments/charges", {
          amount: `${1 + (i >> 1)}.00`,
          currency: "USD",
          card: CARD,
          capture: true,
        }, headers);
      }),
    );
    for (const [i, r] of results.entries()) {
      assert.equal(r.status, 201, `charge ${i}: ${JSON.stringify(r.body)}`);
    }
    for (let i = 0; i < 40; i += 2) {
      assert.equal(results[i].body.id, results[i + 1].body.id, `Request-Id burst-${i >> 1}`);
    }
    assert.equal(new Set(results.map((r) => r.body.id)).size, 20);

    // 20 concurrent full refunds of one charge through both processes: exactly one wins
    const target = results[0].body.id;
    const refunds = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) =>
          call(client, i % 2 ? a.url : b.url, "POST", `payments/charges/${target}/refunds`, {
            amount: "1.00",
          }),
      ),
    );
    assert.equal(refunds.filter((r) => r.status === 201).length, 1);
    // With a KV Connect URL the payments store keeps shared commits within the
    // 10 checks such a server takes: no request was refused.
    assert.equal(kvServer.stats.rejected, 0, "a commit exceeded the KV Connect limits");
    for (const srv of [a, b]) {
      assert.equal(
        (await call(client, srv.url, "GET", `payments/charges/${target}`)).body.status,
        "REFUNDED",
      );
    }
    assert.deepEqual(kvServer.internalErrors, []);
  } finally {
    client.close();
    await Promise.all(procs.map((p) => p.stop()));
    await kvServer.close();
  }
});

Deno.test("payments over KV Connect: a store that stops answering gives 503 within --kv-timeout, never a hang", async () => {
  const kvServer = startKvConnectServer({ token: KV_TOKEN });
  const args = ["--port", "0", "--kv", kvServer.url, "--token", TOKEN, "--kv-timeout", "1500"];
  const client = Deno.createHttpClient({});
  const a = await spawnServer(args, { DENO_KV_ACCESS_TOKEN: KV_TOKEN });
  let closed = false;
  try {
    const input = { amount: "4.00", currency: "USD", card: CARD };
    const created = await call(client, a.url, "POST", "payments/charges", input);
    assert.equal(created.status, 201);
    const path = `payments/charges/${created.body.id}`;
    assert.equal((await call(client, a.url, "GET", path)).status, 200);

    await kvServer.close();
    closed = true;
    const started = performance.now();
    const [create, read, capture, list] = await Promise.all([
      call(client, a.url, "POST", "payments/charges", input),
      call(client, a.url, "GET", path),
      call(client, a.url, "POST", `${path}/capture`, {}),
      call(client, a.url, "GET", "customers/c/cards"),
    ]);
    const elapsed = performance.now() - started;
    for (const r of [create, read, capture, list]) {
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.errors[0].code, "PMT-6000");
      assert.equal(r.headers.get("retry-after"), "1");
    }
    // A create whose outcome is unknown names its (generated) Request-Id, to retry with.
    assert.match(create.headers.get("request-id") ?? "", /^req_/);
    assert.ok(elapsed < 6_000, `answered after ${elapsed} ms`);
  } finally {
    client.close();
    if (!closed) await kvServer.close();
    // Shutting down with store calls still pending inside the client is clean.
    assert.equal((await a.stop()).code, 0);
  }
});
