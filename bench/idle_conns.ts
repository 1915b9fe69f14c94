/**
 * Opens many idle QUIC connections (ALPN `h3`) to a server, for the
 * memory-per-connection benchmark of `bench/run.ts`. Runs in its own process so
 * that its memory is never counted as the server's.
 *
 *     deno run -A bench/idle_conns.ts --port P --ca ca.pem [--count 1000]
 *
 * Prints `ready <n>` once `n` connections completed their handshake, then
 * keeps them open (with keep-alives) until a line arrives on standard input or
 * standard input closes; then closes them all and exits.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { sleep } from "../tests/support/wait.ts";
import { readTarget, TARGET_OPTIONS } from "./target.ts";

/** Connections opened at once. */
const PARALLEL = 32;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { ...TARGET_OPTIONS, count: { type: "string", default: "1000" } },
  });
  const { host, port, caPem } = await readTarget(values);
  const count = Number(values.count);
  const conns: Deno.QuicConn[] = [];
  let next = 0;
  let failed = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      try {
        conns.push(
          await Deno.connectQuic({
            hostname: host,
            port,
            serverName: "localhost",
            caCerts: [caPem],
            alpnProtocols: ["h3"],
            keepAliveInterval: 5_000,
            maxIdleTimeout: 120_000,
          }),
        );
      } catch (err) {
        if (failed++ < 3) console.error(`connect failed: ${err}`);
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  console.log(`ready ${conns.length}`);
  const reader = Deno.stdin.readable.getReader();
  await reader.read().catch(() => {});
  for (const c of conns) {
    try {
      c.close({ closeCode: 0x100, reason: "" });
    } catch {
      // already closed
    }
  }
  // give the close frames a moment to leave
  await sleep(200);
  Deno.exit(0);
}
