/**
 * RFC 9204 over real QUIC: a client that inserts entries into the proxy's
 * QPACK dynamic table and references them (relative, post-base, and blocked
 * references) is served correctly, and the proxy acknowledges its sections.
 */
import assert from "node:assert/strict";
import {
  concatBytes,
  encodeDuplicate,
  encodeIndexedDynamic,
  encodeIndexedPostBase,
  encodeIndexedStatic,
  encodeInsertWithLiteralName,
  encodeInsertWithNameRef,
  encodeLiteralStaticNameRef,
  encodeSectionPrefix,
  encodeSetCapacity,
} from "../../proxy/h3/qpack/_test_util.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { oneBackendConfig, startProxy, testCerts } from "../support/proxy_process.ts";
import { sleep } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

/** One backend, a 4 KiB dynamic table offered (none by default) and the admin listener. */
const withTable = (backend: string) =>
  oneBackendConfig(backend) +
  "limits: {qpack_max_table_capacity: 4096}\nadmin: {address: 127.0.0.1, port: 0}\n";

/** `spooky_qpack_dynamic_sections_total` as `/metrics` shows it. */
async function dynamicSections(adminPort: number): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  return Number(text.match(/^spooky_qpack_dynamic_sections_total (\d+)$/m)?.[1]);
}

// RFC 9204 Appendix A indices.
const S_AUTHORITY = 0;
const S_PATH = 1;
const S_METHOD_GET = 17;
const S_SCHEME_HTTPS = 23;

Deno.test("#35.7: by default no dynamic table is offered and no QPACK decoder stream opened (RFC 9204 §4.2)", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(oneBackendConfig(be.address));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  try {
    const s = await client.serverSettings;
    assert.equal(s.get(0x1) ?? 0, 0, "SETTINGS_QPACK_MAX_TABLE_CAPACITY");
    assert.equal(s.get(0x7) ?? 0, 0, "SETTINGS_QPACK_BLOCKED_STREAMS");
    const res = await client.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/x",
      ]],
    });
    assert.equal(res.status, 200);
    await sleep(100);
    assert.deepEqual(client.serverStreamTypes, [0x00], "the control stream alone");
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("RFC 9204 §4.3, §4.5: dynamic-table references over real QUIC are decoded", async (t) => {
  const be = startBackend("b");
  const proxy = await startProxy(withTable(be.address));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  /** The fields the backend heard, with the authority (`x-authority` of the answer) as `host`. */
  const headersSeen = (
    res: { status: number; headers: Array<[string, string]>; body: Uint8Array },
  ) => {
    assert.equal(res.status, 200, new TextDecoder().decode(res.body));
    const fields = JSON.parse(new TextDecoder().decode(res.body)) as Record<string, string>;
    fields["host"] = res.headers.find(([n]) => n === "x-authority")?.[1] ?? "";
    return fields;
  };
  /** A GET of `/headers` under `prefix`, its `:authority` and one more field given as references. */
  const getHeaders = (prefix: Uint8Array, authority: Uint8Array, field: Uint8Array) =>
    concatBytes(
      prefix,
      encodeIndexedStatic(S_METHOD_GET),
      encodeIndexedStatic(S_SCHEME_HTTPS),
      authority,
      encodeLiteralStaticNameRef(S_PATH, "/headers"),
      field,
    );
  /** Asks with `block`; the backend must see `:authority` and `x-dyn` as the table holds them. */
  const expectTableFields = async (block: Uint8Array) => {
    const seen = headersSeen(await client.request({ head: block }));
    assert.equal(seen["x-dyn"], "one");
    assert.equal(seen["host"], "localhost");
  };
  try {
    const settings = await client.serverSettings;
    const capacity = settings.get(0x1)!;
    assert.ok(capacity >= 220, `QPACK_MAX_TABLE_CAPACITY ${capacity}`);
    const maxEntries = Math.floor(capacity / 32);

    // abs 0 = :authority localhost (static name ref), abs 1 = x-dyn: one
    // (literal name), abs 2 = duplicate of abs 1.
    await client.sendEncoderInstructions(concatBytes(
      encodeSetCapacity(capacity),
      encodeInsertWithNameRef(true, S_AUTHORITY, "localhost"),
      encodeInsertWithLiteralName("x-dyn", "one"),
      encodeDuplicate(0),
    ));

    await t.step("relative indexing (Base = insert count)", () =>
      expectTableFields(getHeaders(
        encodeSectionPrefix(3, 3, maxEntries),
        encodeIndexedDynamic(2), // abs 0: :authority localhost
        encodeIndexedDynamic(0), // abs 2: x-dyn one (duplicate)
      )));

    await t.step("post-base indexing (Base = 0)", () =>
      expectTableFields(getHeaders(
        encodeSectionPrefix(2, 0, maxEntries),
        encodeIndexedPostBase(0), // abs 0
        encodeIndexedPostBase(1), // abs 1
      )));

    await t.step("a blocked section resumes when its entry arrives (§2.1.2)", async () => {
      const block = getHeaders(
        encodeSectionPrefix(4, 4, maxEntries),
        encodeIndexedDynamic(3), // abs 0
        encodeIndexedDynamic(0), // abs 3: not inserted yet
      );
      const pending = client.request({ head: block });
      await sleep(200);
      await client.sendEncoderInstructions(encodeInsertWithLiteralName("x-late", "yes"));
      const seen = headersSeen(await pending);
      assert.equal(seen["x-late"], "yes");
    });

    await t.step("the proxy acknowledges sections on its decoder stream (§4.4.1)", async () => {
      await sleep(100);
      const bytes = concatBytes(...client.serverDecoderStream);
      // Section Acknowledgment: 1xxxxxxx with the stream id (0, 4, 8 here).
      assert.ok(bytes.length >= 3, `decoder stream bytes: ${bytes.length}`);
      assert.ok([...bytes].some((b) => (b & 0x80) !== 0));
      assert.ok(client.serverStreamTypes.includes(0x03), "a QPACK decoder stream");
    });

    await t.step("/metrics counts the sections that referenced the table", async () => {
      assert.ok(await dynamicSections(proxy.adminPort!) >= 3);
    });
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("RFC 9204 §2.2.3: a reference to a missing entry closes the connection, not the proxy", async () => {
  const be = startBackend("b");
  const proxy = await startProxy(withTable(be.address));
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  try {
    const bad = await H3TestClient.connect(proxy.port, ca);
    await bad.serverSettings;
    // Required Insert Count 0 but a dynamic reference: QPACK_DECOMPRESSION_FAILED.
    const res = await bad.request({
      head: concatBytes(Uint8Array.of(0, 0), encodeIndexedDynamic(0)),
    });
    assert.equal(res.finished, false);
    const info = await bad.conn.closed;
    assert.equal(info.closeCode, 0x200);
    await bad.close();
    // The proxy still serves new connections.
    const good = await H3TestClient.connect(proxy.port, ca);
    const ok = await good.request({
      head: [[":method", "GET"], [":scheme", "https"], [":authority", "localhost"], [
        ":path",
        "/x",
      ]],
    });
    assert.equal(ok.status, 200);
    await good.close();
  } finally {
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
