/**
 * Trailers both ways through the real proxy process: an HTTP/3 client (the
 * project's own, `tests/support/h3_client.ts`) sends a body followed by a
 * trailer section; Node's own `http2` server (run by `node`, not Deno)
 * echoes the body, the request's trailers it received, and answers with
 * gRPC-style response trailers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";

/**
 * The backend: `/grpc` collects the body and the request's trailers, then
 * answers the body back (no content-length: streamed, or with one when the
 * path says `?length`) with response trailers `grpc-status`,
 * `grpc-message` and `x-got` (the request trailers it got, as JSON), plus,
 * for `?forbidden`, fields that may not be trailers, which the proxy must
 * drop.
 */
const NODE_BACKEND = `
import http2 from "node:http2";
const server = http2.createServer();
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  const parts = [];
  let got = null;
  stream.on("data", (c) => parts.push(c));
  stream.on("trailers", (t) => { got = { ...t }; });
  stream.on("end", () => {
    if (stream.destroyed || stream.closed) return;
    const body = Buffer.concat(parts);
    const head = { ":status": 200, "content-type": "application/grpc", "x-te": String(headers.te) };
    if (headers[":path"].endsWith("?length")) head["content-length"] = body.length;
    stream.respond(head, { waitForTrailers: true });
    const trailers = { "grpc-status": "0", "grpc-message": "fine", "x-got": JSON.stringify(got) };
    if (headers[":path"].includes("forbidden")) {
      trailers["content-length"] = "999";
      trailers["authorization"] = "Bearer leak";
    }
    stream.on("wantTrailers", () => stream.sendTrailers(trailers));
    stream.end(body);
  });
});
server.listen(Number(process.argv[2]), "127.0.0.1", () => console.log("listening"));
`;

async function startNodeBackend(): Promise<{ address: string; close: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "trailers_e2e_" });
  const script = `${dir}/backend.mjs`;
  await Deno.writeTextFile(script, NODE_BACKEND);
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const child = new Deno.Command("node", {
    args: [script, String(port)],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const first = await reader.read();
  assert.match(first.value ?? "", /listening/, "node backend started");
  reader.cancel().catch(() => {});
  return {
    address: `127.0.0.1:${port}`,
    async close() {
      try {
        child.kill("SIGTERM");
      } catch { /* exited */ }
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test({
  name: "trailers both ways through the proxy",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const backend = await startNodeBackend();
    const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  grpc:
    route: {path_prefix: /}
    backends: [{id: node, address: "${backend.address}"}]
`);
    const ca = await Deno.readTextFile((await testCerts()).caPath);
    const h3 = await H3TestClient.connect(proxy.port, ca);
    const head = (path: string, extra: Array<[string, string]> = []) =>
      [
        [":method", "POST"],
        [":scheme", "https"],
        [":authority", `localhost:${proxy.port}`],
        [":path", path],
        ["te", "trailers"],
        ["content-type", "application/grpc"],
        ...extra,
      ] as Array<[string, string]>;
    try {
      // A streamed body (no content-length) and a small one read whole.
      const big = new Uint8Array(200 * 1024).fill(0x62);
      const cases = [
        { path: "/grpc", body: big, extra: [] as Array<[string, string]> },
        {
          path: "/grpc?length",
          body: enc.encode("hello"),
          extra: [["content-length", "5"]] as Array<[string, string]>,
        },
      ];
      for (const c of cases) {
        const res = await h3.request({
          head: head(c.path, c.extra),
          body: c.body,
          trailers: [["x-checksum", "abc123"], ["x-client-trailer", "yes"]],
        });
        assert.equal(res.status, 200, c.path);
        assert.ok(res.finished, c.path);
        assert.deepEqual(res.body, c.body, `${c.path}: body echoed`);
        assert.equal(
          res.headers.find(([n]) => n === "x-te")?.[1],
          "trailers",
          "te: trailers reaches the backend",
        );
        const t = new Map(res.trailers ?? []);
        assert.equal(t.get("grpc-status"), "0", `${c.path}: response trailers forwarded`);
        assert.equal(t.get("grpc-message"), "fine");
        assert.deepEqual(JSON.parse(t.get("x-got") ?? "null"), {
          "x-checksum": "abc123",
          "x-client-trailer": "yes",
        }, `${c.path}: request trailers reached the backend`);
      }
      {
        // Fields that may not be trailers (RFC 9110 §6.5.1) are dropped on the way.
        const res = await h3.request({ head: head("/grpc?forbidden"), body: enc.encode("x") });
        const t = new Map(res.trailers ?? []);
        assert.equal(t.get("grpc-status"), "0");
        assert.equal(t.has("content-length"), false, "content-length dropped from trailers");
        assert.equal(t.has("authorization"), false, "authorization dropped from trailers");
      }
      // No request trailers: the backend sees none.
      const plain = await h3.request({ head: head("/grpc"), body: enc.encode("x") });
      assert.equal(plain.status, 200);
      assert.equal(new Map(plain.trailers ?? []).get("x-got"), "null");
      // A request trailer that must not be one (RFC 9110 §6.5.1) is refused.
      const bad = await h3.request({
        head: head("/grpc"),
        body: enc.encode("x"),
        trailers: [["content-length", "1"]],
      });
      assert.equal(bad.status, 400, dec.decode(bad.body));
      const auth = await h3.request({
        head: head("/grpc"),
        body: enc.encode("x"),
        trailers: [["authorization", "Bearer smuggled"]],
      });
      assert.equal(auth.status, 400, dec.decode(auth.body));
    } finally {
      await h3.close();
      await proxy.stop();
      await backend.close();
    }
  },
});
