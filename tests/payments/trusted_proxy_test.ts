/**
 * `--trusted-proxy CIDR` (issue #24 item 5, payments part): the token rate
 * limit counts the forwarded client address when, and only when, the TCP
 * peer is in a trusted CIDR; otherwise the peer's own address, whatever
 * `X-Forwarded-For` / `Forwarded` say. Real sockets, the CLI as shipped.
 */
import assert from "node:assert/strict";
import { spawnServer } from "./_server_process.ts";

/** The default burst of the token endpoint (payments/rate_limit.ts). */
const BURST = 30;

const card = { number: "4111111111111111", expMonth: 12, expYear: 2031, cvc: "123" };

async function token(base: string, headers: Record<string, string>): Promise<number> {
  const res = await fetch(`${base}/quickbooks/v4/payments/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ card }),
    signal: AbortSignal.timeout(10_000),
  });
  await res.body?.cancel();
  return res.status;
}

/** Spend one client's whole burst; its next request is 429. */
async function exhaust(base: string, headers: Record<string, string>): Promise<void> {
  for (let i = 0; i < BURST; i++) assert.equal(await token(base, headers), 201, `request ${i}`);
  assert.equal(await token(base, headers), 429);
}

/** The payments server (in-memory store, token `t`) with one `--trusted-proxy` per CIDR. */
function serverTrusting(cidrs: string[]) {
  const trusted = cidrs.flatMap((cidr) => ["--trusted-proxy", cidr]);
  return spawnServer(["--port", "0", "--kv", ":memory:", "--token", "t", ...trusted]);
}

Deno.test("trusted proxy peer: each forwarded client has its own token bucket", async () => {
  const srv = await serverTrusting(["127.0.0.0/8", "::1/128"]);
  try {
    await exhaust(srv.url, { "x-forwarded-for": "203.0.113.1" });
    // Another client behind the same proxy is not starved.
    assert.equal(await token(srv.url, { "x-forwarded-for": "203.0.113.2" }), 201);
    assert.equal(await token(srv.url, { forwarded: "for=198.51.100.7;proto=https" }), 201);
    // A client cannot escape its bucket by prepending a hop: the proxy's
    // own (rightmost) untrusted entry counts.
    assert.equal(await token(srv.url, { "x-forwarded-for": "6.6.6.6, 203.0.113.1" }), 429);
    // A trusted hop between is skipped.
    assert.equal(await token(srv.url, { "x-forwarded-for": "203.0.113.1, 127.0.0.9" }), 429);
    // Without forwarded headers the proxy's own address counts.
    assert.equal(await token(srv.url, {}), 201);
  } finally {
    await srv.stop();
  }
});

Deno.test("untrusted peer: forwarded headers are ignored, the peer address counts", async () => {
  const srv = await serverTrusting(["10.0.0.0/8"]);
  try {
    await exhaust(srv.url, { "x-forwarded-for": "203.0.113.1" });
    assert.equal(await token(srv.url, { "x-forwarded-for": "203.0.113.2" }), 429);
    assert.equal(await token(srv.url, { forwarded: "for=198.51.100.7" }), 429);
    assert.equal(await token(srv.url, {}), 429);
  } finally {
    await srv.stop();
  }
});

Deno.test("--trusted-proxy with no CIDR is a usage error (exit 2)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "payments/main.ts", "--kv", ":memory:", "--trusted-proxy", "nope/99"],
    cwd: new URL("../../", import.meta.url),
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.match(new TextDecoder().decode(out.stderr), /--trusted-proxy must be a CIDR/);
});
