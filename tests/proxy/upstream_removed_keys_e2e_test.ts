/**
 * The upstream keys of earlier versions, with a real proxy process (issue
 * #28.1): `limits.upstream_workers` and `limits.upstream_client` asking for
 * what is gone (worker threads, the `node:http2` client) stop the proxy at
 * startup with a line that says what replaced them; asking for what the
 * proxy now always does (`auto` or `0` workers, the `spooky` client) is a
 * warning, and requests behave as they did: small and streamed bodies both
 * ways, retry on the next backend after a connect failure, the per-pool
 * timeout, and a clean stop.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { runCli, startProxy, testCerts, writeConfig } from "../support/proxy_process.ts";
import { faultConfig } from "../support/faults.ts";
import { sleep } from "../support/wait.ts";

const ca = async () => await Deno.readTextFile((await testCerts()).caPath);

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A `host:port` on loopback that nothing listens on. */
function deadAddress(): string {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const address = `127.0.0.1:${probe.addr.port}`;
  probe.close();
  return address;
}

/** The line of `key` in a {@link faultConfig} with one backend and `extra` (1-based). */
function lineOf(yaml: string, key: string): number {
  return yaml.split("\n").findIndex((l) => l.trimStart().startsWith(`${key}:`)) + 1;
}

Deno.test("#28.1: upstream_workers: 2 and upstream_client: node stop the proxy at startup, saying what replaced them", async () => {
  const yaml = faultConfig([deadAddress()], {
    extra: "limits:\n  upstream_workers: 2\n  upstream_client: node",
  });
  const r = await runCli(["-c", await writeConfig(yaml)]);
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.split("\n");
  const workers = `limits.upstream_workers (line ${lineOf(yaml, "upstream_workers")}): was removed`;
  const client = `limits.upstream_client (line ${lineOf(yaml, "upstream_client")}): was removed`;
  assert.ok(
    lines.some((l) => l.startsWith(workers) && /run on the QUIC thread/.test(l)),
    r.stderr,
  );
  assert.ok(
    lines.some((l) => l.startsWith(client) && /own HTTP\/2 client carries every exchange/.test(l)),
    r.stderr,
  );
  assert.ok(lines.includes("Configuration validation failed. Exiting..."), r.stderr);
  assert.doesNotMatch(r.stdout, /is starting/);
});

Deno.test("#28.1: upstream_workers: auto and upstream_client: spooky are ignored with a warning; requests behave as before", async () => {
  const live = startBackend("live", async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/slow") await sleep(3000);
    if (path === "/echo") {
      const body = new Uint8Array(await req.arrayBuffer());
      return new Response(body, { headers: { "x-sha": await sha256(body) } });
    }
    return new Response(`live ${req.method} ${path}`);
  });
  // Every exchange to it is a connect failure.
  const dead = deadAddress();
  const yaml = faultConfig([dead, live.address], {
    requestTimeoutMs: 700,
    extra: "limits: {upstream_workers: auto, upstream_client: spooky}",
  });
  const proxy = await startProxy(yaml);
  const c = await H3TestClient.connect(proxy.port, await ca());
  const head = (method: string, path: string, extra: Array<[string, string]> = []) =>
    [
      [":method", method],
      [":scheme", "https"],
      [":authority", `localhost:${proxy.port}`],
      [":path", path],
      ...extra,
    ] as Array<[string, string]>;
  try {
    const line = lineOf(yaml, "limits");
    for (const key of ["upstream_workers", "upstream_client"]) {
      const warning = `Warning: limits.${key} (line ${line}): ignored: the key was removed`;
      assert.ok(proxy.stderr.some((l) => l.startsWith(warning)), proxy.stderr.join("\n"));
    }
    // Round-robin over [dead, live]: whichever comes first, every GET is
    // answered by the live backend (a connect failure moves on).
    for (let i = 0; i < 4; i++) {
      const r = await c.request({ head: head("GET", `/g${i}`) });
      assert.equal(r.status, 200);
      assert.equal(new TextDecoder().decode(r.body), `live GET /g${i}`);
    }
    // A small body (read whole) and a large one (streamed), echoed intact.
    // A streamed body is not retried (it may meet the dead backend first,
    // 502): two tries, one of which round-robin gives the live backend.
    for (const size of [1000, 3 << 20]) {
      const big = new Uint8Array(size);
      for (let off = 0; off < size; off += 65536) {
        crypto.getRandomValues(big.subarray(off, Math.min(size, off + 65536)));
      }
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 2 && !statuses.includes(200); attempt++) {
        const r = await c.request({
          head: head("POST", "/echo", [["content-length", String(size)]]),
          body: big,
        });
        statuses.push(r.status);
        if (r.status !== 200) continue;
        assert.equal(r.body.length, size);
        assert.equal(r.headers.find(([n]) => n === "x-sha")?.[1], await sha256(big));
      }
      assert.ok(statuses.includes(200), `size ${size}: ${statuses}`);
      assert.ok(statuses.every((s) => s === 200 || s === 502), `size ${size}: ${statuses}`);
    }
    // The pool's request_timeout_ms holds.
    const t0 = performance.now();
    const slow = await c.request({ head: head("GET", "/slow") });
    assert.equal(slow.status, 503);
    assert.ok(performance.now() - t0 < 2800, "the 700 ms timeout, not the backend's 3 s");
  } finally {
    await c.close();
    assert.equal(await proxy.stop(), 0);
    await live.close();
  }
});
