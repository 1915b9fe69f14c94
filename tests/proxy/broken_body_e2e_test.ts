/**
 * docs/architecture.md §4: an upstream body that breaks mid-way must never look complete
 * to the client. Deno's QUIC API cannot reset a stream with an error code, so
 * the proxy ends such a response with a malformed trailer section (RFC 9114
 * §4.1.2, §4.3): gtlsclient (nghttp3) and Chromium both reject it.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { chromiumDumpDom } from "../support/chromium.ts";
import { gtls } from "../support/gtls.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { oneBackendConfig, startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";

const PAGE = `<!doctype html><html><body><pre id="out">pending</pre><script>
fetch("/broken").then((r) => r.text()).then(
  (t) => { document.getElementById("out").textContent = "COMPLETE " + t.length; },
  (e) => { document.getElementById("out").textContent = "REJECTED " + e.name; },
);
</script></body></html>`;

Deno.test("e2e: a backend body that breaks mid-way is never taken as complete", async (t) => {
  const be = startBackend("b", (req) => {
    if (new URL(req.url).pathname === "/page.html") {
      return new Response(PAGE, { headers: { "content-type": "text/html" } });
    }
    let chunks = 0;
    return new Response(
      new ReadableStream({
        pull(c) {
          if (chunks++ < 10) c.enqueue(new Uint8Array(10_000).fill(120));
          else c.error(new Error("backend crashed mid-body"));
        },
      }),
    );
  });
  const proxy = await startProxy(oneBackendConfig(be.address));
  try {
    await t.step("gtlsclient: nghttp3 closes the stream with H3_MESSAGE_ERROR", async () => {
      const r = await gtls(proxy.port, `https://localhost:${proxy.port}/broken`);
      assert.deepEqual(r.statuses, [200]);
      assert.match(r.output, /HTTP stream 0 closed with error code 270/); // 0x10e
    });

    await t.step("the response ends with a trailer section holding a pseudo-header", async () => {
      const ca = await Deno.readTextFile((await testCerts()).caPath);
      const client = await H3TestClient.connect(proxy.port, ca);
      try {
        const res = await client.request({
          head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
            ":path",
            "/broken",
          ]],
        });
        assert.equal(res.status, 200);
        assert.ok(res.trailers?.some(([n]) => n.startsWith(":")), "malformed trailers");
      } finally {
        await client.close();
      }
    });

    await t.step({
      ...needs("Chromium: the fetch body read rejects", "chromium"),
      fn: async () => {
        const origin = `localhost:${proxy.port}`;
        const r = await chromiumDumpDom(`https://${origin}/page.html`, {
          quicOrigin: origin,
          spkiPin: (await testCerts()).spkiPin,
        });
        assert.match(r.dom, /REJECTED TypeError/, r.dom.slice(0, 400));
      },
    });
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
