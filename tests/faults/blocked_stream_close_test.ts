/**
 * Fault test (issue #8), regression found by the frame fuzzer: request streams
 * whose QPACK field sections are blocked (they reference dynamic-table entries
 * never inserted, RFC 9204 §2.1.2) while the connection dies of a connection
 * error. Every such stream must be released with its connection: before the
 * fix, a section that blocked just after the close waited forever, the
 * connection was never released, and SIGTERM left the proxy hanging on it
 * ("Top-level await promise never resolved", exit code 1).
 */
import assert from "node:assert/strict";
import { encodeFrame, FrameType } from "../../proxy/h3/mod.ts";
import { startBackend } from "../support/backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { faultConfig, getHead } from "../support/faults.ts";
import { withTimeout } from "../support/wait.ts";

const CONNECTIONS = 40;
const BLOCKED_PER_CONNECTION = 8;

async function send(conn: Deno.QuicConn, bytes: Uint8Array): Promise<void> {
  try {
    const s = await conn.createBidirectionalStream();
    const w = s.writable.getWriter();
    await w.write(bytes);
    await w.close();
    s.readable.cancel().catch(() => {});
  } catch {
    // the connection is already closed
  }
}

Deno.test("faults: QPACK-blocked streams are released when their connection fails, so shutdown completes", async () => {
  const be = startBackend("b");
  // A dynamic table offered (none by default), so that these sections block.
  const proxy = await startProxy(
    faultConfig([be.address], { extra: "limits: {qpack_max_table_capacity: 4096}" }),
  );
  const ca = await Deno.readTextFile((await testCerts()).caPath);
  // Required Insert Count 1 (encoded 2 with 128 entries), Base 0 + post-base index 0.
  const blocked = encodeFrame(FrameType.HEADERS, Uint8Array.of(0x02, 0x80, 0x10));
  // DATA before HEADERS: H3_FRAME_UNEXPECTED, a connection error (RFC 9114 §4.1).
  const fatal = encodeFrame(FrameType.DATA, Uint8Array.of(1, 2, 3));
  try {
    for (let i = 0; i < CONNECTIONS; i++) {
      const c = await H3TestClient.connect(proxy.port, ca);
      const sends = [];
      for (let j = 0; j < BLOCKED_PER_CONNECTION; j++) {
        sends.push(send(c.conn, blocked));
        if (j === i % BLOCKED_PER_CONNECTION) sends.push(send(c.conn, fatal));
      }
      await Promise.all(sends);
      await withTimeout(c.conn.closed, 5000, "connection error close");
      await c.close();
    }
    const c = await H3TestClient.connect(proxy.port, ca);
    assert.equal((await c.request({ head: getHead("/ok", proxy.port) })).status, 200);
    await c.close();
  } finally {
    const code = await withTimeout(proxy.stop(), 15_000, "proxy shutdown").catch(async (err) => {
      await proxy.stop("SIGKILL");
      throw err;
    });
    await be.close();
    assert.equal(code, 0, proxy.stderr.filter((l) => !/\] \[(WARN|INFO)\] /.test(l)).join("\n"));
  }
});
