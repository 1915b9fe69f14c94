/**
 * The UDP receive buffer of the QUIC socket, which nothing in Deno sizes:
 * `Deno.QuicEndpoint` has no buffer option, so the socket gets Linux's
 * `net.core.rmem_default` (212,992 bytes on most distributions). A burst of
 * new connections overflows it; every Initial the kernel drops costs that
 * client a retransmission timeout (about 1 s). quic-go asks for 7 MiB and
 * warns when it cannot get it; here the operator raises the default (see
 * `examples/sysctl.d/60-spooky.conf`), the proxy warns at startup when it is
 * small, and `/metrics` shows the kernel's drop counters.
 *
 * The parsers are pure (text in, numbers out); {@link readUdpStats} reads
 * `/proc` and is the only I/O here. Everything is `undefined` off Linux.
 *
 * @module
 */

/** The receive buffer quic-go asks for, and below which the proxy warns (7 MiB). */
export const WANTED_RECEIVE_BUFFER = 7 * 1024 * 1024;

/**
 * `RcvbufErrors` of the `Udp:` table of `/proc/net/snmp` (datagrams dropped
 * because a socket's receive buffer was full, all IPv4 UDP sockets of the
 * host since boot), or `undefined` when absent.
 */
export function parseSnmpRcvbufErrors(snmp: string): number | undefined {
  const lines = snmp.split("\n").filter((l) => l.startsWith("Udp: "));
  if (lines.length < 2) return undefined;
  const names = lines[0].trim().split(/\s+/);
  const values = lines[1].trim().split(/\s+/);
  const i = names.indexOf("RcvbufErrors");
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
  /** What a new socket gets, so what the QUIC socket has. */
  rmemDefault?: number;
  /** The most a socket may ask for (Deno does not ask). */
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

/**
 * The startup warning for a small receive buffer, with the exact commands
 * that fix it, or `undefined` when the buffer is large enough (or unknown).
 *
 * @example
 * ```ts
 * receiveBufferWarning({ rmemDefault: 212992, rmemMax: 212992 });
 * // "the QUIC socket's UDP receive buffer is 208 KiB (net.core.rmem_default); ..."
 * ```
 */
export function receiveBufferWarning(sysctl: ReceiveBufferSysctl): string | undefined {
  const current = sysctl.rmemDefault;
  if (current === undefined || current >= WANTED_RECEIVE_BUFFER) return undefined;
  const wanted = WANTED_RECEIVE_BUFFER;
  const max = Math.max(wanted, sysctl.rmemMax ?? 0);
  return `the QUIC socket's UDP receive buffer is ${Math.round(current / 1024)} KiB ` +
    `(net.core.rmem_default; Deno cannot size it per socket): a burst of new connections ` +
    `overflows it and each dropped Initial costs a client a retransmission timeout. ` +
    `Raise it to ${wanted / 1024 / 1024} MiB: sysctl -w net.core.rmem_max=${max} ` +
    `net.core.rmem_default=${wanted} (persist it with examples/sysctl.d/60-spooky.conf in ` +
    `/etc/sysctl.d/), then restart the proxy. Drops show in spooky_udp_receive_buffer_errors_total.`;
}
