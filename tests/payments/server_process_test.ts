/**
 * End-to-end: the real `payments/main.ts` process over real HTTP (h2c and
 * HTTP/1.1), a KV file that never holds card or account numbers, and
 * durability of acknowledged charges across SIGKILL.
 */
import assert from "node:assert/strict";
import { apiCaller, spawnServer } from "./_server_process.ts";
import { sleep } from "../support/wait.ts";

const TOKEN = "e2e-token";
const CARD_NUMBER = "4012888888881881";
const ACCOUNT_NUMBER = "98765432101234";
const CARD = { number: CARD_NUMBER, expMonth: 11, expYear: 2039, cvc: "987", name: "E2E" };

const call = apiCaller(TOKEN);

async function fileBytes(path: string): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (const suffix of ["", "-wal", "-shm", "-journal"]) {
    try {
      out.push(await Deno.readFile(path + suffix));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return out;
}

function contains(hay: Uint8Array, needle: string): boolean {
  const n = new TextEncoder().encode(needle);
  outer: for (let i = 0; i + n.length <= hay.length; i++) {
    for (let j = 0; j < n.length; j++) if (hay[i + j] !== n[j]) continue outer;
    return true;
  }
  return false;
}

Deno.test("e2e: real process over h2c and HTTP/1.1; KV file holds no card or account number", async () => {
  const dir = await Deno.makeTempDir({ prefix: "payments-e2e-" });
  const kvPath = `${dir}/sub/payments.kv`;
  const srv = await spawnServer([
    "--port",
    "0",
    "--kv",
    kvPath,
    "--token",
    TOKEN,
    "--base-path",
    "/vendor/v4",
    "--base-path",
    "/brand/v4",
  ]);
  const h2 = Deno.createHttpClient({ http1: false, http2: true });
  const h1 = Deno.createHttpClient({ http1: true, http2: false });
  try {
    assert.match(srv.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    for (const [name, client] of [["h2c", h2], ["http/1.1", h1]] as const) {
      const health = await fetch(`${srv.url}/health`, { client });
      assert.equal(health.status, 200, name);
      assert.equal((await health.json()).status, "ok");
      const card = await call(client, srv.url, "POST", "customers/e2e/cards", CARD);
      assert.equal(card.status, 201, name);
      const ch = await call(client, srv.url, "POST", "payments/charges", {
        amount: "42.00",
        currency: "USD",
        card: CARD,
      }, { "Request-Id": `e2e-${name.replace(/\W/g, "")}` });
      assert.equal(ch.status, 201, name);
      const cap = await call(client, srv.url, "POST", `payments/charges/${ch.body.id}/capture`, {});
      assert.equal(cap.body.status, "CAPTURED", name);
      const rf = await call(client, srv.url, "POST", `payments/charges/${ch.body.id}/refunds`, {
        amount: "2.00",
      });
      assert.equal(rf.status, 201, name);
      const ba = await call(client, srv.url, "POST", "customers/e2e/bank-accounts", {
        name: "E2E",
        accountNumber: ACCOUNT_NUMBER,
        accountType: "PERSONAL_CHECKING",
        routingNumber: "021000021",
        phone: "5555550100",
      });
      assert.equal(ba.status, 201, name);
      const ec = await call(client, srv.url, "POST", "payments/echecks", {
        Amount: "3.00",
        PaymentMode: "WEB",
        BankAccount: {
          Name: "E2E",
          AccountNumber: ACCOUNT_NUMBER,
          AccountType: "PERSONAL_SAVINGS",
          RoutingNumber: "021000021",
          Phone: "5555550100",
        },
      });
      assert.equal(ec.status, 201, name);
      const unauth = await fetch(`${srv.url}/brand/v4/payments/charges/${ch.body.id}`, { client });
      assert.equal(unauth.status, 401);
      await unauth.body?.cancel();
      const other = await fetch(`${srv.url}/brand/v4/payments/charges/${ch.body.id}`, {
        client,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal((await other.json()).refundedAmount, "2.00");
    }
    // a real race across the network: 20 concurrent full refunds
    const ch = await call(h2, srv.url, "POST", "payments/charges", {
      amount: "10.00",
      currency: "USD",
      card: CARD,
      capture: true,
    });
    const results = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) =>
          call(i % 2 ? h1 : h2, srv.url, "POST", `payments/charges/${ch.body.id}/refunds`, {
            amount: "10.00",
          }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 201).length, 1);
  } finally {
    h2.close();
    h1.close();
    const status = await srv.stop();
    assert.equal(status.code, 0);
  }
  const files = await fileBytes(kvPath);
  assert.ok(files.length > 0 && files[0].length > 0, "KV file exists");
  for (const bytes of files) {
    assert.equal(contains(bytes, CARD_NUMBER), false, "card number in KV file");
    assert.equal(contains(bytes, ACCOUNT_NUMBER), false, "account number in KV file");
  }
  // the masked forms are there, so the search itself works
  assert.ok(files.some((b) => contains(b, "1881")));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("e2e: SIGKILL during writes loses no acknowledged charge", async () => {
  const dir = await Deno.makeTempDir({ prefix: "payments-kill-" });
  const kvPath = `${dir}/payments.kv`;
  const args = ["--port", "0", "--kv", kvPath, "--token", TOKEN];
  const srv = await spawnServer(args);
  const client = Deno.createHttpClient({ http1: false, http2: true });
  const acked: string[] = [];
  let stop = false;
  const worker = async () => {
    while (!stop) {
      try {
        const r = await call(client, srv.url, "POST", "payments/charges", {
          amount: "1.00",
          currency: "USD",
          card: CARD,
          capture: true,
        });
        if (r.status === 201) acked.push(r.body.id);
      } catch {
        return; // the server died mid-request: not acknowledged
      }
    }
  };
  const workers = Array.from({ length: 8 }, worker);
  while (acked.length < 60) await sleep(5);
  await srv.kill();
  stop = true;
  await Promise.all(workers);
  client.close();

  const again = await spawnServer(args);
  const c2 = Deno.createHttpClient({ http1: false, http2: true });
  try {
    for (const id of acked) {
      const r = await call(c2, again.url, "GET", `payments/charges/${id}`);
      assert.equal(r.status, 200, `charge ${id} lost`);
      assert.equal(r.body.status, "CAPTURED");
    }
  } finally {
    c2.close();
    await again.stop();
  }
  assert.ok(acked.length >= 60);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("e2e: two processes on one KV file: each reads the other's changes at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "payments-shared-" });
  const args = ["--port", "0", "--kv", `${dir}/payments.kv`, "--token", TOKEN];
  const [a, b] = await Promise.all([spawnServer(args), spawnServer(args)]);
  const client = Deno.createHttpClient({ http1: false, http2: true });
  try {
    const created = await call(client, a.url, "POST", "payments/charges", {
      amount: "20.00",
      currency: "USD",
      card: CARD,
    });
    assert.equal(created.status, 201);
    const id = created.body.id;
    const path = `payments/charges/${id}`;
    // Both processes have read (and may hold) the authorized charge.
    for (const srv of [a, b]) {
      assert.equal((await call(client, srv.url, "GET", path)).body.status, "AUTHORIZED");
    }
    assert.equal(
      (await call(client, b.url, "POST", `${path}/capture`, { amount: "20.00" })).status,
      200,
    );
    const seen = await Promise.all([a, b, a].map((s) => call(client, s.url, "GET", path)));
    assert.deepEqual(seen.map((r) => r.body.status), ["CAPTURED", "CAPTURED", "CAPTURED"]);
    assert.equal(
      (await call(client, a.url, "POST", `${path}/refunds`, { amount: "5.00" })).status,
      201,
    );
    const after = await call(client, b.url, "GET", path);
    assert.equal(after.body.refundedAmount, "5.00");
    assert.deepEqual(after.body, (await call(client, a.url, "GET", path)).body);
    // A void through one process, read back by the other.
    const rid = `shared-${crypto.randomUUID()}`;
    const second = await call(client, b.url, "POST", "payments/charges", {
      amount: "3.00",
      currency: "USD",
      card: CARD,
    }, { "Request-Id": rid });
    assert.equal(second.status, 201);
    const secondPath = `payments/charges/${second.body.id}`;
    assert.equal((await call(client, a.url, "GET", secondPath)).body.status, "AUTHORIZED");
    assert.equal(
      (await call(client, b.url, "POST", `payments/txn-requests/${rid}/void`, {})).status,
      201,
    );
    assert.equal((await call(client, a.url, "GET", secondPath)).body.status, "CANCELLED");
  } finally {
    client.close();
    await Promise.all([a.stop(), b.stop()]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("e2e: two processes writing one KV file at once: every write succeeds (a locked database is waited for, not a 500)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "payments-contended-" });
  const args = ["--port", "0", "--kv", `${dir}/payments.kv`, "--token", TOKEN];
  const servers = await Promise.all([spawnServer(args), spawnServer(args)]);
  const client = Deno.createHttpClient({ http1: false, http2: true });
  try {
    // 2 processes × 40 concurrent clients × 5 charges each, each captured
    // through one process and read back through the other.
    const results = await Promise.all(
      servers.flatMap((srv) =>
        Array.from({ length: 40 }, async () => {
          const statuses: number[] = [];
          for (let i = 0; i < 5; i++) {
            const r = await call(client, srv.url, "POST", "payments/charges", {
              amount: "1.00",
              currency: "USD",
              card: CARD,
            });
            statuses.push(r.status);
            if (r.status !== 201) continue;
            const cap = await call(
              client,
              srv.url,
              "POST",
              `payments/charges/${r.body.id}/capture`,
              {},
            );
            statuses.push(cap.status);
            // Read back through the other process.
            const other = servers[(servers.indexOf(srv) + 1) % servers.length];
            const got = await call(client, other.url, "GET", `payments/charges/${r.body.id}`);
            statuses.push(got.status === 200 && got.body.status === "CAPTURED" ? 200 : got.status);
          }
          return statuses;
        })
      ),
    );
    const flat = results.flat();
    const failed = flat.filter((s) => s !== 201 && s !== 200);
    assert.deepEqual(failed, [], `${failed.length} of ${flat.length} writes failed`);
    assert.equal(flat.length, 2 * 40 * 5 * 3);
  } finally {
    client.close();
    await Promise.all(servers.map((s) => s.stop()));
    await Deno.remove(dir, { recursive: true });
  }
});
