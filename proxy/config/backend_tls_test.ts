import assert from "node:assert/strict";
import { parseConfigText } from "./load.ts";

function backendTls(tls: string, limits = ""): unknown {
  const r = parseConfigText(
    `version: 1
listen: {protocol: http3, port: 0, tls: {cert: c.pem, key: k.pem}}
${limits}
upstream:
  a: {route: {path_prefix: /}, backends: [{id: a, address: "127.0.0.1:1", ${tls}}]}
`,
    { checkFiles: false, baseDir: "/etc/spooky" },
  );
  if (!r.ok) {
    return r.kind === "load" ? [r.message] : r.problems.map((p) => `${p.path}: ${p.message}`);
  }
  return r.config.upstream.a.backends[0].tls;
}

Deno.test("backend tls: true is {}, false is none, a mapping keeps ca (resolved) and server_name", () => {
  assert.deepEqual(backendTls("tls: true"), {});
  assert.equal(backendTls("tls: false"), undefined);
  assert.deepEqual(backendTls("tls: {ca: certs/ca.pem, server_name: api.internal}"), {
    ca: "/etc/spooky/certs/ca.pem",
    server_name: "api.internal",
  });
  assert.deepEqual(backendTls("tls: {ca: /abs/ca.pem}"), { ca: "/abs/ca.pem" });
});

Deno.test("backend tls: unknown keys and wrong types are refused, naming the path", () => {
  assert.match(
    String(backendTls("tls: {cafile: x}")),
    /backends\.0\.tls\.cafile|backends\[0\]\.tls\.cafile/,
  );
  assert.match(String(backendTls("tls: 3")), /tls/);
  assert.match(String(backendTls('tls: {ca: ""}')), /tls\.ca/);
});
