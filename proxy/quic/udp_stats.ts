/**
 * The kernel's figures for the QUIC socket's UDP receive buffer: its drop
 * counters, `net.core.rmem_default`/`rmem_max`, and the startup lines that
 * report the size the socket got. `Deno.QuicEndpoint` has no buffer option,
 * so the socket starts with `net.core.rmem_default` (212,992 bytes on most
 * distributions); `udp_buffer.ts` raises it at startup to
 * `limits.udp_receive_buffer` (7 MiB, what quic-go asks for). A burst of new
 * connections overflows a small buffer, and every Initial the kernel drops
 * costs that client a retransmission timeout (about 1 s): the proxy logs the
 * size obtained, warns when it could not get what it asked for (with the
 * cause and the fix), and `/metrics` shows the size and the drop counters.
 *
 * The parsers are pure (text in, numbers out); {@link readUdpStats} reads
 * `/proc` and is the only I/O here. Everything is `undefined` off Linux.
 *
 * @module
 */

import { type ReceiveBufferOutcome, WANTED_RECEIVE_BUFFER } from "./udp_buffer.ts";

export { WANTED_RECEIVE_BUFFER };

/**
 * `RcvbufErrors` of the `Udp:` table of `/proc/net/snmp` (datagrams dropped
 * because a socket's receive buffer was full, all IPv4 UDP sockets of the
 * host since boot), or `undefined` when absent.
 */
export function parseSnmpRcvbufErrors(snmp: string): number | undefined {
  return parseSnmpUdp(snmp, "RcvbufErrors");
}

/** One counter of the `Udp:` lines of `/proc/net/snmp` (`OutDatagrams`, ...), or `undefined`. */
export function parseSnmpUdp(snmp: string, counter: string): number | undefined {
  const lines = snmp.split("\n").filter((l) => l.startsWith("Udp: "));
  if (lines.length < 2) return undefined;
  const names = lines[0].trim().split(/\s+/);
  const values = lines[1].trim().split(/\s+/);
  const i = names.indexOf(counter);
  return i < 1 ? undefined : Number(values[i]);
}

/** `Udp6RcvbufErrors` of `/proc/net/snmp6` (the same for IPv6 sockets), or `undefined`. */
export function parseSnmp6RcvbufErrors(snmp6: string): number | undefined {
  const m = /^Udp6RcvbufErrors\s+(\d+)/m.exec(snmp6);
  return m ? Number(m[1]) : undefined;
}

/**
 * The `drops` column of the sockets bound to local port `port` in a
 * `/proc/net/udp` or `/proc/net/udp6` table, summed (the QUIC socket's own
 * drops: a full receive buffer, mostly), or `undefined` when none is bound.
 */
export function parseSocketDrops(table: string, port: number): number | undefined {
  const lines = table.split("\n");
  const header = lines[0]?.trim().split(/\s+/) ?? [];
  // The header names "tx_queue rx_queue" and "tm->when" as separate words,
  // while each row joins them: count drops from the end, where it is last.
  if (header[header.length - 1] !== "drops") return undefined;
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  let sum: number | undefined;
  for (const line of lines.slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 3) continue;
    const local = fields[1];
    if (local.slice(local.lastIndexOf(":") + 1) !== hexPort) continue;
    sum = (sum ?? 0) + Number(fields[fields.length - 1]);
  }
  return sum;
}

/** What {@link readUdpStats} found; each figure `undefined` when unreadable. */
export interface UdpStats {
  /** Host-wide UDP datagrams dropped at a full receive buffer (IPv4 + IPv6), since boot. */
  rcvbufErrors?: number;
  /** Datagrams the QUIC socket itself dropped (`/proc/net/udp`, `udp6`). */
  socketDrops?: number;
}

/** `net.core.rmem_default` and `rmem_max` in bytes, as Linux reports them. */
export interface ReceiveBufferSysctl {
  /** What a new socket gets: the QUIC socket's size until it is raised. */
  rmemDefault?: number;
  /** Half the most `SO_RCVBUF` may set (`SO_RCVBUFFORCE`, with CAP_NET_ADMIN, may set more). */
  rmemMax?: number;
}

function readNumber(path: string): number | undefined {
  try {
    const n = Number(Deno.readTextFileSync(path).trim());
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

/** Reads `net.core.rmem_default` and `rmem_max` from `/proc/sys`. */
export function readReceiveBufferSysctl(): ReceiveBufferSysctl {
  return {
    rmemDefault: readNumber("/proc/sys/net/core/rmem_default"),
    rmemMax: readNumber("/proc/sys/net/core/rmem_max"),
  };
}

/** Reads the kernel's UDP drop counters for the QUIC socket on `port`. */
export function readUdpStats(port: number): UdpStats {
  const snmp = readText("/proc/net/snmp");
  const snmp6 = readText("/proc/net/snmp6");
  const v4 = snmp === undefined ? undefined : parseSnmpRcvbufErrors(snmp);
  const v6 = snmp6 === undefined ? undefined : parseSnmp6RcvbufErrors(snmp6);
  const udp = readText("/proc/net/udp");
  const udp6 = readText("/proc/net/udp6");
  const d4 = udp === undefined ? undefined : parseSocketDrops(udp, port);
  const d6 = udp6 === undefined ? undefined : parseSocketDrops(udp6, port);
  return {
    rcvbufErrors: v4 === undefined && v6 === undefined ? undefined : (v4 ?? 0) + (v6 ?? 0),
    socketDrops: d4 === undefined && d6 === undefined ? undefined : (d4 ?? 0) + (d6 ?? 0),
  };
}

const kib = (bytes: number) => `${Math.round(bytes / 1024)} KiB`;

/**
 * The startup line that reports the QUIC socket's receive buffer: the size
 * obtained, what was asked, and how it was raised.
 *
 * @example
 * ```ts
 * receiveBufferReport({ wanted: 7340032, before: 212992, bytes: 14680064, via: "SO_RCVBUFFORCE" });
 * // "the QUIC socket's UDP receive buffer is 14336 KiB (asked for 7168 KiB; raised from 208 KiB with SO_RCVBUFFORCE)"
 * ```
 */
export function receiveBufferReport(outcome: ReceiveBufferOutcome): string {
  const size = outcome.bytes === undefined ? "unknown" : kib(outcome.bytes);
  if (outcome.wanted === 0) {
    return `the QUIC socket's UDP receive buffer is ${size} ` +
      `(the kernel's default: limits.udp_receive_buffer is 0)`;
  }
  const how = outcome.via && outcome.before !== undefined
    ? `raised from ${kib(outcome.before)} with ${outcome.via}`
    : "not raised";
  return `the QUIC socket's UDP receive buffer is ${size} (asked for ${
    kib(outcome.wanted)
  }; ${how})`;
}

/**
 * The startup warning when the receive buffer could not be raised to what
 * was asked, with the cause and the fixes, or `undefined` when it was (or
 * nothing was asked).
 *
 * @example
 * ```ts
 * receiveBufferWarning(
 *   { wanted: 7340032, before: 212992, bytes: 425984, via: "SO_RCVBUF", problem: "setsockopt(SO_RCVBUFFORCE) failed: EPERM (1)" },
 *   { rmemMax: 212992 },
 * );
 * // "the QUIC socket's UDP receive buffer is 416 KiB, not the 7168 KiB asked for (...)"
 * ```
 */
export function receiveBufferWarning(
  outcome: ReceiveBufferOutcome,
  sysctl: ReceiveBufferSysctl,
): string | undefined {
  if (outcome.problem === undefined || outcome.wanted === 0) return undefined;
  const size = outcome.bytes === undefined ? "of unknown size" : kib(outcome.bytes);
  const max = Math.max(outcome.wanted, sysctl.rmemMax ?? 0);
  return `the QUIC socket's UDP receive buffer is ${size}, not the ${kib(outcome.wanted)} ` +
    `asked for (limits.udp_receive_buffer): ${outcome.problem}. A burst of new connections ` +
    `overflows a small buffer and each dropped Initial costs a client a retransmission timeout. ` +
    `Fix: sysctl -w net.core.rmem_max=${max} (persist it with examples/sysctl.d/60-spooky.conf ` +
    `in /etc/sysctl.d/) or give the proxy CAP_NET_ADMIN, then restart it. ` +
    `Drops show in spooky_udp_receive_buffer_errors_total.`;
}
