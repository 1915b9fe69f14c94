/**
 * The QUIC transport seen by the HTTP/3 server: an interface, its
 * implementation on `Deno.QuicEndpoint` with admission limits (handshake
 * deadlines, caps on handshakes and connections, per client address group and
 * network, the oldest unfinished handshake shed for a newcomer), and an
 * in-memory pair for tests.
 *
 * @example
 * ```ts
 * import { listenQuic } from "./mod.ts";
 *
 * const cert = await Deno.readTextFile(".dev/certs/cert.pem");
 * const key = await Deno.readTextFile(".dev/certs/key.pem");
 * const transport = listenQuic({ hostname: "127.0.0.1", port: 0, cert, key,
 *   limits: { handshakeTimeoutMs: 5_000, maxPerAddress: 32 } });
 * const conn = await transport.accept();
 * ```
 *
 * @module
 */

export type * from "./transport.ts";
export {
  type AdmissionLimits,
  DEFAULT_ADMISSION_LIMITS,
  DenoQuicListener,
  type DenoQuicTransport,
  listenQuic,
  type ListenQuicOptions,
} from "./deno_transport.ts";
export { type AdmissionEntry, AdmissionTable, type AdmitResult, type Shed } from "./admission.ts";
export { addressGroup, type PrefixLengths } from "./address_group.ts";
export { type Step as MemoryStep, type StepCount as MemoryStepCount } from "./memory_release.ts";
