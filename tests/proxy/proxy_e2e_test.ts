/**
 * End-to-end: the real proxy process over real QUIC on loopback, driven by
 * gtlsclient (independent ngtcp2 + nghttp3 client) and by the project's own
 * test client, forwarding to real h2c backends.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { gtls } from "../support/gtls.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";

/** The fields of a `method` request for `path` at `localhost` (no port), then `extra`. */
function fields(
  method: string,
  path: string,
  ...extra: Array<[string, string]>
): Array<[string, string]> {
  return [
    [":method", method],
    [":scheme", "https"],
    [":authority", "localhost"],
    [":path", path],
    ...extra,
  ];
}

function config(backends: Record<string, string[]>, extra = ""): string {
  let y = `version: 1
listen:
  protocol: http3
  address: 127.0.0.1
  port: 0
  tls:
    cert: {{cert}}
    key: {{key}}
limits:
  max_request_body_bytes: 20000000
upstream:
`;
  for (const [prefix, addrs] of Object.entries(backends)) {
    const name = prefix === "/" ? "root" : prefix.replace(/\W/g, "") || "p";
    y +=
      `  ${name}:\n    route:\n      path_prefix: "${prefix}"\n    request_timeout_ms: 1500\n    backends:\n`;
    addrs.forEach((a, i) => (y += `      - id: ${name}${i}\n        address: ${a}\n`));
  }
  return y + extra;
}

Deno.test("e2e: gtlsclient through the proxy to an h2c backend", async (t) => {
  const be = startBackend("b1");
  const proxy = await startProxy(config({ "/": [be.address] }));
  try {
    await t.step("GET returns the backend's 200 and forwarding headers reach it", async () => {
      const r = await gtls(proxy.port, `https://localhost:${proxy.port}/headers`, { quiet: false });
      assert.equal(r.code, 0, r.output);
      assert.deepEqual(r.statuses, [200]);
      const seen = be.seen.at(-1)!;
      assert.equal(seen.headers.get("x-forwarded-proto"), "https");
      assert.equal(seen.headers.get("x-forwarded-for"), "127.0.0.1");
      assert.equal(seen.headers.get("x-forwarded-host"), `localhost:${proxy.port}`);
      assert.equal(seen.headers.get("via"), "3 spooky");
      assert.match(seen.headers.get("forwarded") ?? "", /for=127\.0\.0\.1;proto=https/);
      assert.match(r.output, /via: 2 spooky/);
    });

    await t.step("a 10 MiB POST is echoed back with the same SHA-256", async () => {
      const dir = await Deno.makeTempDir();
      const file = `${dir}/upload.bin`;
      const data = crypto.getRandomValues(new Uint8Array(65536));
      const big = new Uint8Array(10 * 1024 * 1024);
      for (let off = 0; off < big.length; off += data.length) big.set(data, off);
      await Deno.writeFile(file, big);
      const want = [...new Uint8Array(await crypto.subtle.digest("SHA-256", big))]
        .map((b) => b.toString(16).padStart(2, "0")).join("");
      const r = await gtls(proxy.port, `https://localhost:${proxy.port}/echo`, {
        method: "POST",
        data: file,
        extra: [`--download=${dir}`],
      });
      assert.equal(r.code, 0, r.output.slice(-2000));
      assert.deepEqual(r.statuses, [200]);
      assert.match(r.output, new RegExp(`x-body-sha256: ${want}`));
      const got = await Deno.readFile(`${dir}/echo`);
      assert.equal(got.length, big.length);
      const gotHash = [...new Uint8Array(await crypto.subtle.digest("SHA-256", got))]
        .map((b) => b.toString(16).padStart(2, "0")).join("");
      assert.equal(gotHash, want);
      await Deno.remove(dir, { recursive: true });
    });

    await t.step("a 16 MiB random download arrives byte for byte", async () => {
      const dir = await Deno.makeTempDir();
      const r = await gtls(proxy.port, `https://localhost:${proxy.port}/random/16777216`, {
        extra: [`--download=${dir}`],
      });
      assert.deepEqual(r.statuses, [200], r.output.slice(-1000));
      const want = /x-body-sha256: ([0-9a-f]{64})/.exec(r.output)?.[1];
      const got = await Deno.readFile(`${dir}/16777216`);
      assert.equal(got.length, 16777216);
      const hash = [...new Uint8Array(await crypto.subtle.digest("SHA-256", got))]
        .map((b) => b.toString(16).padStart(2, "0")).join("");
      assert.equal(hash, want);
      await Deno.remove(dir, { recursive: true });
    });

    await t.step("500 concurrent streams on one connection all get 200", async () => {
      const r = await gtls(proxy.port, `https://localhost:${proxy.port}/x`, { streams: 500 });
      assert.equal(r.code, 0, r.output.slice(-2000));
      assert.equal(r.statuses.length, 500);
      assert.ok(r.statuses.every((s) => s === 200));
    });

    await t.step("100 requests under 5% packet loss both ways all get 200", async () => {
      const r = await gtls(proxy.port, `https://localhost:${proxy.port}/bytes/2000`, {
        streams: 100,
        txLoss: 0.05,
        rxLoss: 0.05,
        timeoutMs: 90_000,
      });
      assert.equal(r.statuses.length, 100, r.output.slice(-2000));
      assert.ok(r.statuses.every((s) => s === 200));
    });
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("e2e: routing and error statuses", async (t) => {
  const api = startBackend("api");
  const web = startBackend("web");
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const dead = `127.0.0.1:${probe.addr.port}`; // a port nothing listens on
  probe.close();
  const proxy = await startProxy(
    config({ "/api": [api.address], "/web": [web.address], "/dead": [dead] }) +
      `  hosted:
    route:
      host: "*.example.test"
      path_prefix: /web
    backends:
      - id: hosted0
        address: ${api.address}
`,
  );
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  const get = (path: string, authority = "localhost") =>
    client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", authority], [":path", path]],
    });
  try {
    await t.step("longest prefix wins; host + prefix needs both", async () => {
      const a = await get("/api/users?x=1");
      assert.equal(a.status, 200);
      assert.equal(JSON.parse(new TextDecoder().decode(a.body)).backend, "api");
      assert.equal(JSON.parse(new TextDecoder().decode(a.body)).path, "/api/users?x=1");
      const w = await get("/web/index.html");
      assert.equal(JSON.parse(new TextDecoder().decode(w.body)).backend, "web");
      const h = await get("/web/x", "a.Example.TEST:443");
      assert.equal(JSON.parse(new TextDecoder().decode(h.body)).backend, "api");
    });
    await t.step("no route → 404 JSON", async () => {
      const r = await get("/nothing");
      assert.equal(r.status, 404);
      assert.equal(JSON.parse(new TextDecoder().decode(r.body)).error, "not_found");
    });
    await t.step("backend refusing connections → 502", async () => {
      const r = await get("/dead");
      assert.equal(r.status, 502);
    });
    await t.step("backend slower than request_timeout_ms → 503", async () => {
      const r = await get("/api/../slow/3000".replace("/api/..", "/api"));
      assert.equal(r.status, 503);
      assert.equal(JSON.parse(new TextDecoder().decode(r.body)).error, "backend_timeout");
    });
    await t.step("malformed request (uppercase field name) → 400", async () => {
      const r = await client.request({ head: fields("GET", "/api", ["X-Upper", "1"]) });
      assert.equal(r.status, 400);
    });
    await t.step("missing :path → 400", async () => {
      const r = await client.request({
        head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"]],
      });
      assert.equal(r.status, 400);
    });
    await t.step("header list over SETTINGS_MAX_FIELD_SECTION_SIZE → 431", async () => {
      const r = await client.request({
        head: fields("GET", "/api", ["x-big", "a".repeat(70_000)]),
      });
      assert.equal(r.status, 431);
      const ok = await get("/api/after");
      assert.equal(ok.status, 200, "the connection survives");
    });
    await t.step("body over max_request_body_bytes → 413", async () => {
      const r = await client.request({
        head: fields("POST", "/api/echo", ["content-length", "30000000"]),
      });
      assert.equal(r.status, 413);
    });
    await t.step("HEAD and 204 carry no body; content-length is preserved", async () => {
      const head = await client.request({ head: fields("HEAD", "/api/bytes/1234") });
      assert.equal(head.status, 200);
      assert.equal(head.body.length, 0);
      const g = await get("/api/bytes/1234");
      assert.equal(g.body.length, 1234);
      assert.equal(g.headers.find(([n]) => n === "content-length")?.[1], "1234");
      const nc = await get("/api/status/204");
      assert.equal(nc.status, 204);
      assert.equal(nc.body.length, 0);
    });
    await t.step(
      "the server advertises its field section limit and, by default, no QPACK dynamic table",
      async () => {
        const s = await client.serverSettings;
        assert.equal(s.get(0x1) ?? 0, 0, "SETTINGS_QPACK_MAX_TABLE_CAPACITY");
        assert.ok((s.get(0x6) ?? 0) > 0, "SETTINGS_MAX_FIELD_SECTION_SIZE advertised");
      },
    );
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await api.close();
    await web.close();
  }
});

Deno.test("e2e: SIGTERM sends GOAWAY, lets the in-flight request finish, exits 0", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(config({ "/": [be.address] }));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    await client.serverSettings;
    const inflight = client.request({ head: fields("GET", "/slow/800") });
    await sleep(300);
    const exit = proxy.stop("SIGTERM");
    const res = await inflight;
    assert.equal(res.status, 200);
    assert.equal(new TextDecoder().decode(res.body), "slow");
    assert.equal(await exit, 0);
    assert.ok(client.goaways.length >= 1, "GOAWAY received");
    const log = proxy.stderr.join("\n");
    assert.match(log, /Draining connections/);
    assert.match(log, /Shutdown complete/);
    assert.ok(log.indexOf("Draining connections") < log.indexOf("Shutdown complete"));
  } finally {
    await client.close();
    await be.close();
  }
});
