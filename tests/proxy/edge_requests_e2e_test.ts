/**
 * Client-side request rules end to end (issue #24 items 4, 5 and #25 item
 * 6): a real proxy process, real clients (the project's HTTP/3 client, curl
 * on the TCP fallback) and a real backend on loopback.
 */
import assert from "node:assert/strict";
import { concatBytes, decodeVarint, encodeFrame, FrameType, H3Code } from "../../proxy/h3/mod.ts";
import { startBackend } from "../support/backend.ts";
import { chromiumDumpDom } from "../support/chromium.ts";
import { curlLocal } from "../support/curl.ts";
import { firefoxThroughProxy } from "../support/firefox.ts";
import { gtls } from "../support/gtls.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { oneBackendConfig, startProxy, testCerts } from "../support/proxy_process.ts";
import { needs } from "../support/tools.ts";
import { sleep } from "../support/wait.ts";

const ca = async () => await Deno.readTextFile((await testCerts()).caPath);

function head(
  authority: string | null,
  path: string,
  extra: Array<[string, string]> = [],
) {
  const fields: Array<[string, string]> = [[":method", "GET"], [":scheme", "https"]];
  if (authority !== null) fields.push([":authority", authority]);
  fields.push([":path", path], ...extra);
  return fields;
}

/** curl's exit code, and the response it printed (head included) with its errors. */
async function curl(port: number, args: string[]): Promise<{ code: number; text: string }> {
  const out = await curlLocal(port, ["-sk", "-i", ...args]);
  return { code: out.exit, text: out.stdout + out.stderr };
}

Deno.test("#24.4: an impossible :authority or host is 400 at the proxy, over HTTP/3 and the TCP fallback, and never reaches the backend", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
upstream:
  root: {route: {path_prefix: /}, backends: [{id: b0, address: "${be.address}"}]}
`);
  const client = await H3TestClient.connect(proxy.port, await ca());
  try {
    const p = proxy.port;
    for (const authority of ["localhost:99999", "localhost:65536", "[::::]:443", "[1.2.3.4]"]) {
      const r = await client.request({ head: head(authority, "/a") });
      assert.equal(r.status, 400, authority);
      assert.match(new TextDecoder().decode(r.body), /bad_request/);
    }
    // host without :authority gets the same rule.
    const hostOnly = await client.request({
      head: head(null, "/h", [["host", "localhost:99999"]]),
    });
    assert.equal(hostOnly.status, 400);
    // The TCP fallback: HTTP/1.1 Host and HTTP/2 :authority (curl sends the Host it is given).
    for (const proto of ["--http1.1", "--http2"]) {
      const r = await curl(p, [proto, "-H", "Host: localhost:99999", `https://localhost:${p}/t`]);
      assert.match(r.text, /^HTTP\/[0-9.]+ 400/, `${proto}: ${r.text}`);
    }
    assert.equal(be.seen.length, 0, "no impossible authority reached the backend");
    // A possible one still goes through, on both listeners.
    assert.equal((await client.request({ head: head("localhost:65535", "/ok") })).status, 200);
    const ok = await curl(p, ["--http1.1", `https://localhost:${p}/ok`]);
    assert.match(ok.text, /^HTTP\/1\.1 200/, ok.text);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("#25.6: CANCEL_PUSH from a client that sent no MAX_PUSH_ID closes the connection with H3_ID_ERROR (RFC 9114 §7.2.3)", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(oneBackendConfig(be.address));
  const pem = await ca();
  const client = await H3TestClient.connect(proxy.port, pem);
  const other = await H3TestClient.connect(proxy.port, pem);
  try {
    assert.equal((await client.request({ head: head("localhost", "/x") })).status, 200);
    await client.sendControl(encodeFrame(FrameType.CANCEL_PUSH, Uint8Array.of(5)));
    const info = await client.conn.closed.catch((e) => ({ closeCode: -1, reason: String(e) }));
    assert.equal(info.closeCode, H3Code.ID_ERROR, `closed with ${info.closeCode}: ${info.reason}`);
    // Another connection is not affected.
    assert.equal((await other.request({ head: head("localhost", "/y") })).status, 200);
  } finally {
    await client.close();
    await other.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

const FORGED: Array<[string, string]> = [
  ["x-forwarded-for", "6.6.6.6"],
  ["x-forwarded-proto", "http"],
  ["x-forwarded-host", "evil.test"],
  ["forwarded", "for=6.6.6.6;proto=http"],
  ["x-real-ip", "6.6.6.6"],
];

async function forwardedSeen(trusted: string): Promise<Record<string, string>> {
  const be = startBackend("b");
  const proxy = await startProxy(`${oneBackendConfig(be.address)}${trusted}\n`);
  const client = await H3TestClient.connect(proxy.port, await ca());
  try {
    const r = await client.request({ head: head("localhost", "/headers", FORGED) });
    assert.equal(r.status, 200);
    return JSON.parse(new TextDecoder().decode(r.body));
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
}

Deno.test("#24.5: a client's forged forwarding fields are replaced by the proxy's own; a trusted proxy's are appended to", async () => {
  // Default: nobody is trusted.
  const plain = await forwardedSeen("");
  assert.equal(plain["x-forwarded-for"], "127.0.0.1");
  assert.equal(plain["x-forwarded-proto"], "https");
  assert.equal(plain["x-forwarded-host"], "localhost");
  assert.equal(plain["forwarded"], "for=127.0.0.1;proto=https;host=localhost");
  assert.equal(plain["x-real-ip"], "127.0.0.1");
  // A trusted client (another proxy in front) keeps its chain; ours is appended.
  const trusted = await forwardedSeen('trusted_proxies: [127.0.0.0/8, "::1"]');
  assert.equal(trusted["x-forwarded-for"], "6.6.6.6, 127.0.0.1");
  assert.equal(trusted["x-forwarded-proto"], "http");
  assert.equal(trusted["x-forwarded-host"], "evil.test");
  assert.equal(
    trusted["forwarded"],
    "for=6.6.6.6;proto=http, for=127.0.0.1;proto=https;host=localhost",
  );
  assert.equal(trusted["x-real-ip"], "6.6.6.6");
  // A list that does not hold the client's address trusts nobody here.
  const other = await forwardedSeen("trusted_proxies: [10.0.0.0/8]");
  assert.equal(other["x-forwarded-for"], "127.0.0.1");
  assert.equal(other["x-real-ip"], "127.0.0.1");
});

/** A backend whose answer comes late and whose body pauses mid-way: the proxy probes the stream meanwhile. */
function slowBackend(results?: (text: string) => void) {
  return startBackend("slow", async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/page.html") {
      return new Response(PROBED_PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    if (url.pathname === "/results") {
      results?.(await req.text());
      return new Response("thanks");
    }
    await sleep(1500);
    let sent = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        async pull(c) {
          if (sent === 2) return c.close();
          if (sent++ === 1) await sleep(1200);
          c.enqueue(new TextEncoder().encode("x".repeat(1000)));
        },
      }),
      { headers: { "content-type": "text/plain" } },
    );
  });
}

const PROBED_PAGE = `<!doctype html><html><body><pre id="out">pending</pre><script>
(async () => {
  const res = await fetch("/slow", { cache: "no-store" });
  const text = await res.text();
  const out = "DONE " + res.status + ":" + text.length;
  document.getElementById("out").textContent = out;
  await fetch("/results", { method: "POST", body: out });
})().catch((e) => {
  document.getElementById("out").textContent = "ERROR " + e;
  fetch("/results", { method: "POST", body: "ERROR " + e });
});
</script></body></html>`;

Deno.test("#25.5: the cancel probes (RFC 9114 §7.2.8 reserved frames before HEADERS and between DATA) are ignored by gtlsclient and Chromium", async () => {
  const be = slowBackend();
  const proxy = await startProxy(oneBackendConfig(be.address));
  try {
    const r = await gtls(proxy.port, `https://localhost:${proxy.port}/slow`, { streams: 3 });
    assert.equal(r.code, 0, r.output.slice(-2000));
    assert.deepEqual(r.statuses, [200, 200, 200]);
    const client = await H3TestClient.connect(proxy.port, await ca());
    try {
      const res = await client.request({ head: head("localhost", "/slow") });
      assert.equal(res.status, 200);
      assert.equal(res.body.length, 2000);
      assert.ok(res.finished);
      // The raw stream: probes before the HEADERS (the head took 1.5 s) and
      // between the two DATA frames (1.2 s apart).
      const s = await client.conn.createBidirectionalStream();
      const w = s.writable.getWriter();
      await w.write(
        encodeFrame(FrameType.HEADERS, client.encodeFields(head("localhost", "/slow"))),
      );
      await w.close();
      // FrameDecoder skips reserved frames: walk the frame headers by hand.
      const parts: Uint8Array[] = [];
      for await (const chunk of s.readable) parts.push(chunk);
      const bytes = concatBytes(...parts);
      const seq: string[] = [];
      for (let at = 0; at < bytes.length;) {
        const type = decodeVarint(bytes, at) as { value: number; length: number };
        const len = decodeVarint(bytes, at + type.length) as { value: number; length: number };
        at += type.length + len.length + len.value;
        const kind = type.value === FrameType.DATA
          ? "D"
          : type.value === FrameType.HEADERS
          ? "H"
          : type.value === 0x21 && len.value === 0
          ? "P"
          : "?";
        seq.push(kind);
      }
      const shape = seq.join("");
      assert.match(shape, /^P+HD+P+D+$/, shape);
    } finally {
      await client.close();
    }
    const certs = await testCerts();
    const origin = `localhost:${proxy.port}`;
    const page = await chromiumDumpDom(`https://${origin}/page.html`, {
      quicOrigin: origin,
      spkiPin: certs.spkiPin,
    });
    assert.match(page.dom, /DONE 200:2000/, `dom: ${page.dom.slice(0, 300)}`);
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test({
  ...needs(
    "#25.5: headless Firefox accepts a slow response with cancel probes in it",
    "firefox-esr",
    "certutil",
  ),
  async fn() {
    const results = Promise.withResolvers<string>();
    const be = slowBackend((text) => results.resolve(text));
    const proxy = await startProxy(oneBackendConfig(be.address));
    try {
      const run = await firefoxThroughProxy(proxy.port, "/page.html", results.promise);
      assert.ok(!run.timedOut, `no results from the page in time; stderr: ${run.stderr}`);
      assert.equal(await results.promise, "DONE 200:2000");
    } finally {
      assert.equal(await proxy.stop(), 0);
      await be.close();
    }
  },
});

Deno.test("#24.5: trusted_proxies applies on reload (SIGHUP), without a restart", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(`${oneBackendConfig(be.address)}trusted_proxies: []\n`);
  const client = await H3TestClient.connect(proxy.port, await ca());
  const xff = async () => {
    const r = await client.request({ head: head("localhost", "/headers", FORGED) });
    assert.equal(r.status, 200);
    return JSON.parse(new TextDecoder().decode(r.body))["x-forwarded-for"];
  };
  try {
    assert.equal(await xff(), "127.0.0.1");
    const text = await Deno.readTextFile(proxy.configPath);
    await Deno.writeTextFile(
      proxy.configPath,
      text.replace("trusted_proxies: []", "trusted_proxies: [127.0.0.1]"),
    );
    Deno.kill(proxy.pid, "SIGHUP");
    let seen = "";
    for (let i = 0; i < 100 && seen !== "6.6.6.6, 127.0.0.1"; i++) {
      await sleep(100);
      seen = await xff();
    }
    assert.equal(seen, "6.6.6.6, 127.0.0.1");
    assert.ok(
      !proxy.stderr.some((l) => /trusted_proxies.*restart/.test(l)),
      "no restart asked for",
    );
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
