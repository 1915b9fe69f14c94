/**
 * Issue #13, point 8 (payments), on a real `payments/main.ts` process: the
 * Deno KV file, its SQLite `-wal`/`-shm` companions and the log file are
 * created mode 0600; a one-time token, a card number or a bearer-looking
 * value sent as a path segment never reaches the debug log.
 */
import assert from "node:assert/strict";
import { spawnServer } from "./_server_process.ts";

const TOKEN = "files-token";
const BEARER_LIKE = "Zt7qW2xL9vB4nM8kR3pS6dF1gH5jK0aYcEu"; // 35 base64url characters

async function modes(dir: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile) out[e.name] = (await Deno.stat(`${dir}/${e.name}`)).mode! & 0o777;
  }
  return out;
}

Deno.test("payments: store and log files are 0600; tokens in request paths are redacted from the debug log", async () => {
  const dir = await Deno.makeTempDir({ prefix: "payments-files-" });
  const server = await spawnServer([
    "--port",
    "0",
    "--token",
    TOKEN,
    "--kv",
    `${dir}/kv/payments.kv`,
    "--log-file",
    `${dir}/log/payments.log`,
    "--log-level",
    "debug",
  ]);
  const base = `${server.url}/vendor/v4`;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, body: await res.json() };
  };
  let stopped = false;
  try {
    const card = { number: "4111111111111111", expMonth: 12, expYear: 2035, cvc: "123", name: "F" };
    const token = await call("POST", "payments/tokens", { card });
    assert.equal(token.status, 201);
    const tok: string = token.body.id;
    assert.match(tok, /^tok_/);
    const charge = await call("POST", "payments/charges", {
      amount: "1.00",
      currency: "USD",
      token: tok,
    });
    assert.equal(charge.status, 201);
    // Paths a client may send: a token, a card number, a bearer-looking value.
    await call("GET", `payments/tokens/${tok}`);
    await call("GET", `customers/c1/cards/${card.number}`);
    await call("GET", `payments/charges/${BEARER_LIKE}`);
    await call("GET", `payments/charges/${charge.body.id}`);

    // While the store is open, its SQLite companions exist too.
    const kvModes = await modes(`${dir}/kv`);
    assert.ok("payments.kv-wal" in kvModes, JSON.stringify(kvModes));
    for (const [name, mode] of Object.entries(kvModes)) {
      assert.equal(mode, 0o600, `${name} is ${mode.toString(8)}`);
    }
    const status = await server.stop();
    stopped = true;
    assert.equal(status.code, 0);
    assert.deepEqual(await modes(`${dir}/log`), { "payments.log": 0o600 });

    const log = await Deno.readTextFile(`${dir}/log/payments.log`);
    assert.match(log, /GET \/vendor\/v4\/payments\/tokens\/\[REDACTED\] 404/);
    assert.match(log, /GET \/vendor\/v4\/payments\/charges\/\[REDACTED\] /);
    // Ids that are not secrets stay readable.
    assert.ok(log.includes(`GET /vendor/v4/payments/charges/${charge.body.id} 200`), log);
    for (const secret of [tok.slice(4), card.number, BEARER_LIKE, TOKEN]) {
      assert.ok(!log.includes(secret), `${secret} leaked into the log:\n${log}`);
    }
  } finally {
    if (!stopped) await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
