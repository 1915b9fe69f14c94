/**
 * Fault test (#35.4): a header section over `limits.max_header_list_size`
 * is its own stream's 431, whatever its size up to the frame bound; only a
 * HEADERS frame past that bound (16 times the limit, at least 1 MiB) closes
 * the connection, with H3_EXCESSIVE_LOAD. Before, a section past the limit
 * plus 1 KiB closed the connection and lost every other request on it.
 */
import assert from "node:assert/strict";
import { concatBytes, encodeFrameHeader, FrameType, H3Code } from "../../proxy/h3/mod.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";
import { withTimeout } from "../support/wait.ts";

const LIMIT = 16_384;
/** The frame bound for LIMIT: 16 × 16 KiB is under 1 MiB, so 1 MiB. */
const CLOSE_ABOVE = 1024 * 1024;

async function setup(hold?: Promise<void>, arrived?: () => void) {
  const be = startBackend("b", async (req) => {
    if (new URL(req.url).pathname === "/hold") {
      arrived?.();
      await hold;
    }
    return new Response("ok");
  });
  const proxy = await startProxy(
    faultConfig([be.address], { extra: `limits: {max_header_list_size: ${LIMIT}}` }),
  );
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  const client = await H3TestClient.connect(proxy.port, ca);
  const stop = async () => {
    await client.close();
    await proxy.stop();
    await be.close();
  };
  return { proxy, client, stop };
}

/** A request head with one field making the encoded section about `bytes` long. */
function bigHead(client: H3TestClient, port: number, bytes: number): Uint8Array {
  // "X" has an 8-bit Huffman code: the encoded section is as long as the value.
  return client.encodeFields([...getHead("/big", port), ["x-big", "X".repeat(bytes)]]);
}

Deno.test("#35.4: a 40 KB header section is that stream's 431; a concurrent request on the connection gets its 200", async () => {
  const hold = Promise.withResolvers<void>();
  const arrived = Promise.withResolvers<void>();
  const { proxy, client, stop } = await setup(hold.promise, arrived.resolve);
  try {
    // Stream A waits at the backend while stream B carries the big section.
    const a = client.request({ head: getHead("/hold", proxy.port) });
    await withTimeout(arrived.promise, 10_000, "request A at the backend");
    const block = bigHead(client, proxy.port, 40_000);
    assert.ok(block.length > 40_000 && block.length < 41_000, `section of ${block.length} bytes`);
    const b = await withTimeout(client.request({ head: block }), 10_000, "request B");
    assert.equal(b.status, 431, "the big section's own stream is answered");
    assert.equal(JSON.parse(new TextDecoder().decode(b.body)).error, "headers_too_large");
    hold.resolve();
    const answered = await withTimeout(a, 10_000, "request A");
    assert.equal(answered.status, 200, "the concurrent request is not lost");
    const after = await withTimeout(
      client.request({ head: getHead("/after", proxy.port) }),
      10_000,
      "request after",
    );
    assert.equal(after.status, 200, "the connection serves on");
  } finally {
    hold.resolve();
    await stop();
  }
});

Deno.test("#35.4: a HEADERS frame up to 1 MiB (16 × the limit, at least 1 MiB) is a 431; one byte more closes the connection with H3_EXCESSIVE_LOAD", async () => {
  const { client, stop } = await setup();
  try {
    // Only the frame header and a little of the payload are sent: the answer
    // comes as soon as the frame header is read.
    const start = (length: number) =>
      concatBytes(encodeFrameHeader(FrameType.HEADERS, length), new Uint8Array(1000));
    const atBound = await withTimeout(
      client.request({ raw: start(CLOSE_ABOVE) }),
      10_000,
      "frame at the bound",
    );
    assert.equal(atBound.status, 431);
    const over = await withTimeout(
      client.request({ raw: start(CLOSE_ABOVE + 1) }),
      10_000,
      "frame over the bound",
    );
    assert.equal(over.status, 0, "no answer on the stream");
    const info = await withTimeout(client.conn.closed, 10_000, "connection close");
    assert.equal(
      info.closeCode,
      H3Code.EXCESSIVE_LOAD,
      `closed with 0x${info.closeCode.toString(16)}: ${info.reason}`,
    );
  } finally {
    await stop();
  }
});
