/**
 * A real browser over HTTP/3: headless Chromium loads a page through the
 * proxy; the page's script makes requests with many headers, which must reach
 * the backend intact.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { chromiumDumpDom } from "../support/chromium.ts";
import { oneBackendConfig, startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";

const PAGE = `<!doctype html><html><head><title>spooky</title></head><body>
<pre id="out">pending</pre>
<script>
(async () => {
  const results = [];
  for (let round = 0; round < 5; round++) {
    const headers = {};
    for (let i = 0; i < 40; i++) headers["x-many-" + i] = "value-" + round + "-" + i + "-" + "v".repeat(i);
    const res = await fetch("/api/headers?round=" + round, { headers, cache: "no-store" });
    const seen = await res.json();
    let ok = 0;
    for (let i = 0; i < 40; i++) if (seen["x-many-" + i] === headers["x-many-" + i]) ok++;
    results.push(res.status + ":" + ok);
  }
  const post = await fetch("/api/echo", { method: "POST", body: "x".repeat(100000) });
  results.push("echo:" + (await post.text()).length);
  document.getElementById("out").textContent = "DONE " + results.join(" ");
})().catch((e) => { document.getElementById("out").textContent = "ERROR " + e; });
</script></body></html>`;

Deno.test({
  ...needs(
    "e2e: headless Chromium loads a page over HTTP/3 whose script sends many headers",
    "chromium",
  ),
  async fn() {
    const vias: Array<string | null> = [];
    const be = startBackend("b", (req) => {
      vias.push(req.headers.get("via"));
      const url = new URL(req.url);
      if (url.pathname === "/page.html") {
        return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
      }
      if (url.pathname === "/api/headers") return Response.json(Object.fromEntries(req.headers));
      if (url.pathname === "/api/echo") return new Response(req.body);
      return new Response("not found", { status: 404 });
    });
    const proxy = await startProxy(oneBackendConfig(be.address));
    try {
      const certs = await testCerts();
      const origin = `localhost:${proxy.port}`;
      const r = await chromiumDumpDom(`https://${origin}/page.html`, {
        quicOrigin: origin,
        spkiPin: certs.spkiPin,
      });
      assert.match(
        r.dom,
        /DONE 200:40 200:40 200:40 200:40 200:40 echo:100000/,
        `dom: ${r.dom.slice(0, 500)}\nstderr: ${r.stderr.slice(-1500)}`,
      );
      // Every request went through the proxy (HTTP/3 is the only way in).
      assert.ok(vias.length >= 7);
      assert.ok(vias.every((via) => via === "3 spooky"), vias.join());
    } finally {
      assert.equal(await proxy.stop(), 0);
      await be.close();
    }
  },
});
