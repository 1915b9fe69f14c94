/**
 * A third real HTTP/3 client: headless Firefox ESR (its own QUIC and HTTP/3
 * stack, neqo, whose QPACK encoder uses the dynamic table) loads a page
 * through the proxy. The page's script sends rounds of parallel requests with
 * many custom headers: the same name and value on every request (indexed
 * dynamic entries), the same names with new values (literals with a dynamic
 * name reference), and new names on each request (inserts while other
 * requests are in flight, until Firefox finds the 4 KiB table full: neqo only
 * evicts entries no open section refers to, and every request refers to the
 * oldest ones, so it then stops inserting). The page checks every response
 * (status, echoed headers, response headers, body) and POSTs its findings
 * back through the proxy; the proxy's trace log shows the sections' Required
 * Insert Counts.
 */
import assert from "node:assert/strict";
import { decodePrefixInt, decodeVarint, NEED_MORE } from "../../proxy/h3/mod.ts";
import { startBackend } from "../support/backend.ts";
import { firefoxThroughProxy } from "../support/firefox.ts";
import { oneBackendConfig, startProxy } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";

const ROUNDS = 8;
const PARALLEL = 4;
const SAME = 20;
const VARY = 20;
const FRESH = 10;
const RESP = 10;
const ECHO_BYTES = 200_000;

const PAGE = `<!doctype html><html><head><title>spooky</title></head><body>
<script>
const ROUNDS = ${ROUNDS}, PARALLEL = ${PARALLEL}, SAME = ${SAME}, VARY = ${VARY}, RESP = ${RESP};
const FRESH = ${FRESH};
async function one(round, k) {
  const headers = {};
  for (let i = 0; i < SAME; i++) headers["x-same-" + i] = "same-" + i + "-" + "s".repeat(2 * i);
  for (let i = 0; i < VARY; i++) {
    headers["x-vary-" + i] = "r" + round + "k" + k + "-" + i + "-" + "v".repeat(i);
  }
  for (let i = 0; i < FRESH; i++) headers["x-r" + round + "k" + k + "-" + i] = "fresh-" + i;
  const path = "/api/headers?round=" + round + "&k=" + k;
  const res = await fetch(path, { headers, cache: "no-store" });
  const seen = await res.json();
  let same = 0, vary = 0, fresh = 0, resp = 0;
  for (let i = 0; i < SAME; i++) if (seen.headers["x-same-" + i] === headers["x-same-" + i]) same++;
  for (let i = 0; i < VARY; i++) if (seen.headers["x-vary-" + i] === headers["x-vary-" + i]) vary++;
  for (let i = 0; i < FRESH; i++) {
    const name = "x-r" + round + "k" + k + "-" + i;
    if (seen.headers[name] === headers[name]) fresh++;
  }
  for (let i = 0; i < RESP; i++) {
    if (res.headers.get("x-resp-" + i) === "resp-" + i + "-" + "r".repeat(i)) resp++;
  }
  return { path, status: res.status, pathOk: seen.path === path, same, vary, fresh, resp };
}
(async () => {
  const requests = [];
  for (let round = 0; round < ROUNDS; round++) {
    const ks = [];
    for (let k = 0; k < PARALLEL; k++) ks.push(one(round, k));
    requests.push(...(await Promise.all(ks)));
  }
  let body = "";
  for (let i = 0; body.length < ${ECHO_BYTES}; i++) body += i.toString(36) + ",";
  body = body.slice(0, ${ECHO_BYTES});
  const res = await fetch("/api/echo", {
    method: "POST", body, headers: { "x-same-0": "same-0-" }, cache: "no-store",
  });
  const text = await res.text();
  const echo = { status: res.status, length: text.length, equal: text === body };
  const protocols = performance.getEntries()
    .filter((e) => "nextHopProtocol" in e)
    .map((e) => ({ name: e.name, protocol: e.nextHopProtocol }));
  return { requests, echo, protocols };
})().then(
  (r) => fetch("/api/results", { method: "POST", body: JSON.stringify(r) }),
  (e) => fetch("/api/results", { method: "POST", body: JSON.stringify({ error: String(e) }) }),
);
</script></body></html>`;

interface PageResults {
  error?: string;
  requests: Array<
    {
      path: string;
      status: number;
      pathOk: boolean;
      same: number;
      vary: number;
      fresh: number;
      resp: number;
    }
  >;
  echo: { status: number; length: number; equal: boolean };
  protocols: Array<{ name: string; protocol: string }>;
}

/**
 * From the proxy's trace log (`stream N: received M bytes: <hex>`), the
 * Required Insert Count (encoded, RFC 9204 §4.5.1.1) of the first HEADERS
 * frame of each request stream: non-zero means the section refers to the
 * dynamic table.
 */
function encodedInsertCounts(lines: string[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const line of lines) {
    const m = /stream (\d+): received \d+ bytes: ([0-9a-f]{2}(?: [0-9a-f]{2})*)/.exec(line);
    if (!m || out.has(Number(m[1]))) continue;
    const bytes = new Uint8Array(m[2].split(" ").map((h) => parseInt(h, 16)));
    const type = decodeVarint(bytes, 0);
    if (type === NEED_MORE || type.value !== 0x01) continue;
    const len = decodeVarint(bytes, type.length);
    if (len === NEED_MORE) continue;
    const ric = decodePrefixInt(bytes, type.length + len.length, 8);
    if (ric === NEED_MORE) continue;
    out.set(Number(m[1]), ric.value);
  }
  return out;
}

Deno.test({
  ...needs(
    "e2e: headless Firefox loads a page over HTTP/3 whose script sends many headers (QPACK)",
    "firefox-esr",
    "certutil",
  ),
  async fn() {
    const vias: Array<string | null> = [];
    const results = Promise.withResolvers<string>();
    let text = "";
    results.promise.then((t) => text = t);
    const respHeaders: Record<string, string> = {};
    for (let i = 0; i < RESP; i++) respHeaders[`x-resp-${i}`] = `resp-${i}-${"r".repeat(i)}`;
    const be = startBackend("b", async (req) => {
      vias.push(req.headers.get("via"));
      const url = new URL(req.url);
      if (url.pathname === "/page.html") {
        return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
      }
      if (url.pathname === "/api/headers") {
        return Response.json(
          { path: url.pathname + url.search, headers: Object.fromEntries(req.headers) },
          { headers: respHeaders },
        );
      }
      if (url.pathname === "/api/echo") return new Response(req.body);
      if (url.pathname === "/api/results") {
        results.resolve(await req.text());
        return new Response("thanks");
      }
      return new Response("not found", { status: 404 });
    });
    // Trace logging dumps the first bytes of each request stream (see encodedInsertCounts).
    const proxy = await startProxy(
      oneBackendConfig(be.address) +
        "log: {level: trace}\nlimits: {qpack_max_table_capacity: 4096}\n",
    );
    let stopped: number | undefined;
    const proxyTail = () =>
      [...proxy.stdout, ...proxy.stderr].filter((l) => !/ received \d+ bytes/.test(l)).slice(-30)
        .join("\n");
    try {
      const origin = `localhost:${proxy.port}`;
      const run = await firefoxThroughProxy(proxy.port, "/page.html", results.promise);
      assert.ok(
        !run.timedOut,
        `no results from the page in time (the backend saw ${vias.length} requests); ` +
          `Firefox stderr: ${run.stderr}\nproxy: ${proxyTail()}`,
      );
      assert.ok(
        text,
        `Firefox exited (${run.code}) without results; stderr: ${run.stderr}\nproxy: ${proxyTail()}`,
      );
      const page = JSON.parse(text) as PageResults;
      assert.equal(page.error, undefined, page.error);

      // Every response, as the page saw it.
      assert.equal(page.requests.length, ROUNDS * PARALLEL);
      for (const r of page.requests) {
        assert.deepEqual(r, {
          path: r.path,
          status: 200,
          pathOk: true,
          same: SAME,
          vary: VARY,
          fresh: FRESH,
          resp: RESP,
        });
      }
      assert.deepEqual(page.echo, { status: 200, length: ECHO_BYTES, equal: true });

      // All over HTTP/3: Firefox says so for the page and each request...
      const ours = page.protocols.filter((p) => p.name.startsWith(`https://${origin}/`));
      assert.ok(ours.length >= ROUNDS * PARALLEL + 2, JSON.stringify(page.protocols));
      assert.ok(ours.every((p) => p.protocol === "h3"), JSON.stringify(ours));
      // ...and the backend saw each one forwarded by the proxy (it listens on UDP only).
      assert.ok(vias.length >= ROUNDS * PARALLEL + 3, `${vias.length} requests`);
      assert.ok(vias.every((via) => via === "3 spooky"), vias.join());

      // Firefox's QPACK encoder used our dynamic table: request sections with a
      // non-zero Required Insert Count, decoded correctly (checked above).
      const rics = encodedInsertCounts([...proxy.stdout, ...proxy.stderr]);
      assert.ok(rics.size >= ROUNDS * PARALLEL, `request streams in the trace log: ${rics.size}`);
      const dynamic = [...rics.values()].filter((v) => v > 0).length;
      assert.ok(
        dynamic >= ROUNDS * PARALLEL,
        `sections using the dynamic table: ${dynamic} of ${rics.size}`,
      );
    } finally {
      stopped = await proxy.stop();
      await be.close();
    }
    assert.equal(stopped, 0, `proxy exit code; its log: ${proxyTail()}`);
  },
});
