/**
 * Issue #21.1: every finished request is counted and logged once, whichever
 * listener carried it and whoever answered it. A real proxy with the TCP
 * fallback and the admin listener gets a mixed batch: HTTP/3 requests from
 * the project's own client (good, malformed, undecodable, oversized, header
 * section too large, refused, ambiguous, to a dead backend) and HTTP/2 and
 * HTTP/1.1 requests from curl over the TCP fallback. Access-log lines, the
 * increase of `spooky_requests_total` and the requests sent must be equal.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { curlLocal } from "../support/curl.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

function head(method: string, path: string, port: number, extra: Array<[string, string]> = []) {
  return [
    [":method", method],
    [":scheme", "https"],
    [":authority", `localhost:${port}`],
    [":path", path],
    ...extra,
  ] as Array<[string, string]>;
}

/** Sum of `spooky_requests_total` over its status classes. */
async function requestsTotal(adminPort: number): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^spooky_requests_total\{[^}]*\} (\d+)/.exec(line);
    if (m) sum += Number(m[1]);
  }
  return sum;
}

/** The status curl got (0: none). */
async function curl(port: number, caPath: string, args: string[]): Promise<number> {
  const out = await curlLocal(port, [
    "-s",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code}",
    "--cacert",
    caPath,
    ...args,
  ]);
  return Number(out.stdout);
}

/**
 * A proxy with the TCP fallback, the admin listener (for `/metrics`) and a
 * JSON access log at `file`, routing `/` to `backend`; `pools`: more pools,
 * `extra`: more top-level YAML.
 */
function accountingConfig(
  backend: string,
  file: string,
  more: { pools?: string; extra?: string } = {},
): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "${backend}"}]}
${more.pools ?? ""}
admin: {port: 0}
log: {access: {format: json, file: "${file}"}}
${more.extra ?? ""}
`;
}

Deno.test("#21.1: a mixed batch over HTTP/3 and the TCP fallback: log lines = requests_total increase = requests sent", async () => {
  const be = startBackend("b");
  const dir = await Deno.makeTempDir();
  const file = `${dir}/access.log`;
  const certs = await testCerts();
  const proxy = await startProxy(accountingConfig(be.address, file, {
    pools: `  dead: {route: {path_prefix: /dead}, backends: [{id: d0, address: "127.0.0.1:1"}]}`,
    extra: `limits: {max_request_body_bytes: 1000, max_header_list_size: 2048}
passive_health: {enabled: false}`,
  }));
  const ca = await Deno.readTextFile(certs.caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    const before = await requestsTotal(proxy.adminPort!);
    const p = proxy.port;
    const h3: Array<[string, () => Promise<number>]> = [
      ["ok", async () => (await client.request({ head: head("GET", "/ok", p) })).status],
      // An uppercase field name: the head is malformed (RFC 9114 §4.2).
      [
        "malformed",
        async () =>
          (await client.request({ head: head("GET", "/m", p, [["X-Upper", "1"]]) })).status,
      ],
      // A stream that ends before any HEADERS: there is no head at all.
      ["no head", async () => (await client.request({ raw: new Uint8Array(0) })).status],
      ["oversized body", async () =>
        (await client.request({
          head: head("POST", "/big", p, [["content-length", "5000"]]),
          body: new Uint8Array(5000),
        })).status],
      [
        "header section too large",
        async () =>
          (await client.request({ head: head("GET", "/h", p, [["x-big", "a".repeat(4000)]]) }))
            .status,
      ],
      [
        "refused method",
        async () => (await client.request({ head: head("TRACE", "/", p) })).status,
      ],
      [
        "ambiguous target",
        async () => (await client.request({ head: head("GET", "/a/../b", p) })).status,
      ],
      [
        "dead backend",
        async () => (await client.request({ head: head("GET", "/dead/x", p) })).status,
      ],
      // DATA before HEADERS breaks the connection (H3_FRAME_UNEXPECTED): no
      // answer at all, but a request sent, so one line and one count.
      ["connection error", async () => {
        const own = await H3TestClient.connect(p, ca);
        try {
          return (await own.request({ raw: Uint8Array.of(0x00, 0x02, 0x68, 0x69) })).status;
        } catch {
          return 0;
        } finally {
          await own.close();
        }
      }],
    ];
    const base = `https://localhost:${p}`;
    const tcp: Array<[string, () => Promise<number>]> = [
      ["h2 ok", () => curl(p, certs.caPath, ["--http2", `${base}/t2`])],
      ["h1 ok", () => curl(p, certs.caPath, ["--http1.1", `${base}/t1`])],
      ["h2 refused method", () => curl(p, certs.caPath, ["--http2", "-X", "TRACE", `${base}/`])],
      ["h1 dead backend", () => curl(p, certs.caPath, ["--http1.1", `${base}/dead/z`])],
      ["h2 dead backend", () => curl(p, certs.caPath, ["--http2", `${base}/dead/y`])],
      ["h1 post", () => curl(p, certs.caPath, ["--http1.1", "-d", "hello", `${base}/post`])],
    ];
    const statuses: Record<string, number> = {};
    for (const [name, send] of [...h3, ...tcp]) statuses[name] = await send();
    assert.deepEqual(statuses, {
      "ok": 200,
      "malformed": 400,
      "no head": 400,
      "oversized body": 413,
      "header section too large": 431,
      "refused method": 501,
      "ambiguous target": 400,
      "dead backend": 502,
      "connection error": 0,
      "h2 ok": 200,
      "h1 ok": 200,
      "h2 refused method": 501,
      "h1 dead backend": 502,
      "h2 dead backend": 502,
      "h1 post": 200,
    });
    const sent = h3.length + tcp.length;
    // The access log writes in batches (50 ms); the TCP fallback reports once delivered.
    let lines: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50 && lines.length < sent; i++) {
      await sleep(100);
      lines = (await Deno.readTextFile(file)).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    }
    const counted = (await requestsTotal(proxy.adminPort!)) - before;
    assert.equal(lines.length, sent, JSON.stringify(lines, null, 1));
    assert.equal(counted, sent);
    assert.equal(lines.filter((l) => l.listener === "tcp").length, tcp.length);
    assert.deepEqual(
      lines.map((l) => l.status).sort(),
      Object.values(statuses).map((s) => s === 0 ? 400 : s).sort(),
      "each logged with the status sent (400 for the request that broke its connection)",
    );
    const undecoded = lines.filter((l) => l.method === "-");
    assert.ok(undecoded.length >= 1, "a request without a decodable head is logged as -");
    // The Deno.serve legacy-abort warning is gone (issue #21.7).
    assert.equal(proxy.stderr.some((l) => l.includes("legacy behavior")), false);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("#21.1: TCP fallback: a download the client abandons is one line (outcome aborted) and one count", async () => {
  const be = startBackend("b");
  const dir = await Deno.makeTempDir();
  const file = `${dir}/access.log`;
  const certs = await testCerts();
  const proxy = await startProxy(accountingConfig(be.address, file));
  try {
    const before = await requestsTotal(proxy.adminPort!);
    const size = 64 * 1024 * 1024;
    // 64 MiB at 1 MiB/s, given up after 4 s: long after the head (which a
    // busy machine delayed past a 1 s limit: the client then left before any
    // answer, a 499), long before the end.
    await curl(proxy.port, certs.caPath, [
      "--http2",
      "--limit-rate",
      "1M",
      "--max-time",
      "4",
      `https://localhost:${proxy.port}/bytes/${size}`,
    ]);
    let lines: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 100 && lines.length < 1; i++) {
      await sleep(100);
      lines = (await Deno.readTextFile(file)).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    }
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0].listener, "tcp");
    assert.equal(lines[0].status, 200);
    assert.equal(lines[0].outcome, "aborted");
    assert.ok((lines[0].bytes as number) < size);
    assert.equal((await requestsTotal(proxy.adminPort!)) - before, 1);
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
    await Deno.remove(dir, { recursive: true });
  }
});
