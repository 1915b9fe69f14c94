/**
 * A UDP relay on loopback between QUIC clients and a server, for tests that
 * hold, drop, delay or replay a client's datagrams: each client address gets
 * its own socket toward the server, so the server sees the relay's ports.
 * Every datagram is recorded with the QUIC packet types its headers show
 * (`quic_packets.ts`) and the relay's verdict on it.
 *
 * @module
 */

import { type QuicPacketType, quicPacketTypes } from "./quic_packets.ts";

/** Which way a datagram travels. */
export type RelayDirection = "to_server" | "to_client";

/** What the relay does with one datagram: pass it, lose it, or keep it for {@link UdpRelay.release}. */
export type RelayVerdict = "forward" | "drop" | "hold";

/** One datagram the relay saw. */
export interface RelayedDatagram {
  direction: RelayDirection;
  /** The flow (one per client address or replay), numbered from 0 in order of appearance. */
  flow: number;
  /** Index of the datagram within its flow and direction, from 0. */
  index: number;
  bytes: Uint8Array;
  /** QUIC packet types in the datagram (RFC 9000 §17). */
  packets: QuicPacketType[];
  /** When it arrived (`performance.now()`). */
  at: number;
  verdict: RelayVerdict;
}

/** Options of {@link startUdpRelay}. */
export interface UdpRelayOptions {
  /** The server's UDP port on 127.0.0.1. */
  serverPort: number;
  /** Decides each datagram's fate (default: forward everything). */
  decide?(d: Omit<RelayedDatagram, "verdict">): RelayVerdict;
  /** Delay added to every forwarded datagram, each way (ms; default 0). */
  delayMs?: number;
}

/** A running relay. */
export interface UdpRelay {
  /** The port clients send to (127.0.0.1). */
  readonly port: number;
  /** Every datagram seen so far, in order of arrival. */
  readonly seen: readonly RelayedDatagram[];
  /** The relay's source port toward the server for a flow (what the server sees as the client's port). */
  serverSidePort(flow: number): number | undefined;
  /** Forwards the held datagrams (of one flow, or of all), in their order, and stops holding them. */
  release(flow?: number): Promise<void>;
  /**
   * Sends client datagrams to the server again from a new socket (a new
   * source port, as an attacker replaying a recorded flight would): a new
   * flow whose answers from the server are recorded and dropped. Returns the
   * flow number.
   */
  replay(datagrams: Uint8Array[]): Promise<number>;
  /** Closes every socket. */
  close(): void;
}

const LOOPBACK = "127.0.0.1";

interface Flow {
  id: number;
  /** Where answers go: the client's address, or nowhere for a replay. */
  client?: Deno.NetAddr;
  upstream: Deno.DatagramConn;
  counts: Record<RelayDirection, number>;
  held: Array<{ direction: RelayDirection; bytes: Uint8Array }>;
}

/**
 * Starts a relay on a free loopback port toward `serverPort`.
 *
 * @example
 * ```ts
 * const relay = startUdpRelay({
 *   serverPort: proxy.port,
 *   // hold the client's Finished (its first Handshake packet) and what follows
 *   decide: (d) => d.direction === "to_server" && d.index > 0 ? "hold" : "forward",
 * });
 * // run a client against relay.port, then: await relay.release();
 * ```
 */
export function startUdpRelay(opts: UdpRelayOptions): UdpRelay {
  const front = Deno.listenDatagram({ transport: "udp", hostname: LOOPBACK, port: 0 });
  const server: Deno.NetAddr = { transport: "udp", hostname: LOOPBACK, port: opts.serverPort };
  const flows = new Map<string, Flow>();
  const byId: Flow[] = [];
  const seen: RelayedDatagram[] = [];
  let closed = false;

  const send = (flow: Flow, direction: RelayDirection, bytes: Uint8Array) => {
    const go = () => {
      if (closed) return;
      const out = direction === "to_server"
        ? flow.upstream.send(bytes, server)
        : flow.client
        ? front.send(bytes, flow.client)
        : Promise.resolve(0);
      out.catch(() => {});
    };
    if (opts.delayMs) setTimeout(go, opts.delayMs);
    else go();
  };

  const handle = (flow: Flow, direction: RelayDirection, bytes: Uint8Array) => {
    const d = {
      direction,
      flow: flow.id,
      index: flow.counts[direction]++,
      bytes,
      packets: quicPacketTypes(bytes),
      at: performance.now(),
    };
    const verdict = flow.client || direction === "to_server"
      ? opts.decide?.(d) ?? "forward"
      : "drop";
    seen.push({ ...d, verdict });
    if (verdict === "forward") send(flow, direction, bytes);
    else if (verdict === "hold") flow.held.push({ direction, bytes });
  };

  const newFlow = (client?: Deno.NetAddr): Flow => {
    const upstream = Deno.listenDatagram({ transport: "udp", hostname: LOOPBACK, port: 0 });
    const flow: Flow = {
      id: byId.length,
      client,
      upstream,
      counts: { to_server: 0, to_client: 0 },
      held: [],
    };
    byId.push(flow);
    pump(upstream, (bytes) => handle(flow, "to_client", bytes));
    return flow;
  };

  pump(front, (bytes, from) => {
    const key = `${from.hostname}:${from.port}`;
    let flow = flows.get(key);
    if (!flow) flows.set(key, flow = newFlow(from));
    handle(flow, "to_server", bytes);
  });

  return {
    port: (front.addr as Deno.NetAddr).port,
    seen,
    serverSidePort: (id) => (byId[id]?.upstream.addr as Deno.NetAddr | undefined)?.port,
    async release(id?: number) {
      for (const flow of id === undefined ? byId : [byId[id]]) {
        for (const { direction, bytes } of flow?.held.splice(0) ?? []) send(flow, direction, bytes);
      }
      await Promise.resolve();
    },
    async replay(datagrams: Uint8Array[]) {
      const flow = newFlow();
      for (const bytes of datagrams) {
        seen.push({
          direction: "to_server",
          flow: flow.id,
          index: flow.counts.to_server++,
          bytes,
          packets: quicPacketTypes(bytes),
          at: performance.now(),
          verdict: "forward",
        });
        await flow.upstream.send(bytes, server);
      }
      return flow.id;
    },
    close() {
      if (closed) return;
      closed = true;
      for (const socket of [front, ...byId.map((f) => f.upstream)]) {
        try {
          socket.close();
        } catch {
          // already closed
        }
      }
    },
  };
}

/** Reads a socket until it closes, handing each datagram to `onDatagram`. */
async function pump(
  socket: Deno.DatagramConn,
  onDatagram: (bytes: Uint8Array, from: Deno.NetAddr) => void,
): Promise<void> {
  try {
    for await (const [bytes, from] of socket) onDatagram(bytes, from as Deno.NetAddr);
  } catch {
    // closed
  }
}
