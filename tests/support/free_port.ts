/**
 * A loopback port for a test or benchmark to hand to a program it starts
 * (a server that takes its port on the command line or in a file).
 *
 * @example
 * ```ts
 * import { freePort } from "./free_port.ts";
 *
 * const port = freePort(); // pass it to the child before it binds
 * ```
 *
 * @module
 */

/** Tries before {@link freePort} gives up: each one is a port the kernel just chose. */
const ATTEMPTS = 50;

/**
 * A port of 127.0.0.1 that nothing listens on right now, on TCP or UDP (so
 * an HTTP/3 listener and its TCP fallback can both take it). Another program
 * may take it before the caller does: use it at once.
 */
export function freePort(): number {
  for (let i = 0; i < ATTEMPTS; i++) {
    const tcp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = tcp.addr;
    try {
      Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port }).close();
      return port;
    } catch {
      // taken on UDP: try another
    } finally {
      tcp.close();
    }
  }
  throw new Error(`no loopback port free on both TCP and UDP in ${ATTEMPTS} tries`);
}
