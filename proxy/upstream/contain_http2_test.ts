/**
 * The net of `contain_http2.ts` against the real escape: Deno 2.9.6's
 * `node:http2` client, push left enabled, and a backend that promises the
 * same stream twice. The session is destroyed with a protocol error and its
 * unheard pushed stream raises it as an uncaught exception. Without the net
 * the process dies; with it, it lives on and the session's own streams fail.
 *
 * @module
 */

import assert from "node:assert/strict";
import { isNodeHttp2Error } from "./contain_http2.ts";

const SCRIPT = (net: boolean) => `
import http2 from "node:http2";
import { containedHttp2Errors, containNodeHttp2Errors } from ${
  JSON.stringify(new URL("./contain_http2.ts", import.meta.url).href)
};
import { Flag, frame, FrameType, hpackBlock, okAnswer, startEvilBackend } from ${
  JSON.stringify(new URL("../../tests/support/evil_h2_backend.ts", import.meta.url).href)
};
if (${net}) containNodeHttp2Errors();
// Every answer promises stream 2 again: the second promise is a PROTOCOL_ERROR.
const promise = (id) => frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, id, new Uint8Array([0, 0, 0, 2,
  ...hpackBlock([[":method", "GET"], [":scheme", "http"], [":path", "/p"], [":authority", "x"]])]));
const evil = startEvilBackend({ name: "push_twice", description: "", expect: 502,
  answer: (p, id) => p.write(promise(id), ...okAnswer(id)) });
const session = http2.connect("http://" + evil.address);
session.on("error", () => {});
const outcomes = [];
for (let i = 0; i < 2; i++) {
  await new Promise((resolve) => {
    const s = session.request({ ":path": "/", ":method": "GET" }, { endStream: true });
    s.on("response", (h) => outcomes.push(String(h[":status"])));
    s.on("error", (e) => outcomes.push(e.code ?? e.message));
    s.on("close", resolve);
    s.resume();
  });
}
await new Promise((resolve) => setTimeout(resolve, 200));
console.log(JSON.stringify({ outcomes, contained: containedHttp2Errors() }));
session.destroy();
await evil.close();
`;

async function run(net: boolean): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    cwd: new URL("../../", import.meta.url).pathname,
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(SCRIPT(net)));
  await w.close();
  const timer = setTimeout(() => child.kill(), 30_000);
  const out = await child.output();
  clearTimeout(timer);
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("node:http2's uncaught protocol error kills the process without the net, and not with it", async () => {
  const [bare, netted] = await Promise.all([run(false), run(true)]);
  // The fault is real in this runtime (if Deno fixes it, this side changes: then the net is moot).
  assert.notEqual(bare.code, 0, "without the net the process dies");
  assert.match(bare.stderr, /Protocol error/);
  assert.equal(netted.code, 0, netted.stderr);
  // The first answer arrived; the second request failed with the session.
  assert.deepEqual(JSON.parse(netted.stdout.trim()), {
    outcomes: ["200", "ERR_HTTP2_ERROR"],
    contained: 1,
  });
});

Deno.test("isNodeHttp2Error: by code, or by a stack inside node:http2; nothing else", () => {
  assert.ok(isNodeHttp2Error(Object.assign(new Error("x"), { code: "ERR_HTTP2_ERROR" })));
  const e = new Error("Protocol error");
  e.stack =
    "Error: Protocol error\n    at Http2Session.onSessionInternalError (ext:deno_node/http2.ts:1:1)";
  assert.ok(isNodeHttp2Error(e));
  assert.ok(!isNodeHttp2Error(new Error("test crash")));
  assert.ok(!isNodeHttp2Error("ERR_HTTP2_ERROR"));
  assert.ok(!isNodeHttp2Error(Object.assign(new Error("x"), { code: "ECONNRESET" })));
});
