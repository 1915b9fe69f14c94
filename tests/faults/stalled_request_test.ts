/**
 * Fault test: a client that stops sending in the middle of its request (its
 * header section, or its body) while keeping the connection alive gets 408
 * after `limits.request_idle_timeout_ms`; it cannot hold the stream, or the
 * backend request behind it, for ever. Without the timeout these requests
 * would end only when the client finally sends its FIN, and not with a 408
 * (checked: the test then fails).
 */
import assert from "node:assert/strict";
import { encodeFrameHeader, FrameType } from "../../proxy/h3/frames.ts";
import { concatBytes } from "../../shared/bytes.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";

Deno.test("faults: a request stalled in its headers or its body gets 408 after request_idle_timeout_ms", async () => {
  const backend = startBackend("a");
  const proxy = await startProxy(
    faultConfig([backend.address], { extra: "limits: {request_idle_timeout_ms: 300}" }),
  );
  const client = await H3TestClient.connect(
    proxy.port,
    await Deno.readTextFile((await testCerts()).caPath),
  );
  try {
    // Half a HEADERS frame, then nothing until the FIN 2 s later.
    const head = client.encodeFields(getHead("/stalled", proxy.port));
    const frame = concatBytes(encodeFrameHeader(FrameType.HEADERS, head.length), head);
    const stalledHead = await client.request({
      raw: frame.subarray(0, Math.floor(frame.length / 2)),
      finDelayMs: 2_000,
    });
    assert.equal(stalledHead.status, 408, new TextDecoder().decode(stalledHead.body));

    // A POST announcing 100 bytes that sends 10, then nothing until the FIN.
    const post = client.encodeFields([
      [":method", "POST"],
      [":scheme", "https"],
      [":authority", `localhost:${proxy.port}`],
      [":path", "/echo"],
      ["content-length", "100"],
    ]);
    const stalledBody = await client.request({
      raw: concatBytes(
        encodeFrameHeader(FrameType.HEADERS, post.length),
        post,
        encodeFrameHeader(FrameType.DATA, 10),
        new Uint8Array(10),
      ),
      finDelayMs: 2_000,
    });
    assert.equal(stalledBody.status, 408, new TextDecoder().decode(stalledBody.body));

    // The connection and the backend go on serving.
    assert.equal((await client.request({ head: getHead("/after", proxy.port) })).status, 200);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await backend.close();
  }
});
