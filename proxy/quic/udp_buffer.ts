/**
 * Sizing the QUIC socket's UDP receive buffer, which `Deno.QuicEndpoint` has
 * no option for: left alone the socket keeps `net.core.rmem_default`
 * (212,992 bytes on most Linux systems), a burst of new connections overflows
 * it, and every Initial the kernel drops costs that client a retransmission
 * timeout (about 1 s). The process owns the socket, though: its descriptor is
 * the entry of `/proc/self/fd` that links to the inode `/proc/net/udp{,6}`
 * lists for the port, and `setsockopt` through FFI (`libc.ts`) raises it, as
 * quic-go does for Caddy: `SO_RCVBUF` first (capped by the kernel at twice
 * `net.core.rmem_max`), then `SO_RCVBUFFORCE` (no cap, needs CAP_NET_ADMIN)
 * when that fell short. `getsockopt` reads back what the socket got.
 *
 * The table parsers are pure; {@link raiseReceiveBuffer} does the I/O and
 * never throws: what it could not do is in its outcome's `problem`.
 *
 * @module
 */

import { lastErrno, type LibcSymbols, openLibc } from "./libc.ts";

/** The receive buffer quic-go asks for, the default of `limits.udp_receive_buffer` (7 MiB). */
export const WANTED_RECEIVE_BUFFER = 7 * 1024 * 1024;

/** Linux socket option numbers (`asm-generic/socket.h`; the same on x86-64 and arm64). */
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;
const SO_RCVBUFFORCE = 33;

/**
 * The inodes of the sockets bound to local port `port` in a `/proc/net/udp`
 * or `/proc/net/udp6` table (the 10th field of each row).
 */
export function socketInodes(table: string, port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const out: string[] = [];
  for (const line of table.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    const local = fields[1];
    if (local.slice(local.lastIndexOf(":") + 1) === hexPort) out.push(fields[9]);
  }
  return out;
}

/** The inode of a `/proc/<pid>/fd` link to a socket (`socket:[1234]` → `1234`), or `undefined`. */
export function socketLinkInode(link: string): string | undefined {
  return /^socket:\[(\d+)\]$/.exec(link)?.[1];
}

/** The descriptor of this process's UDP socket bound to `port`, or why none was found. */
export function findUdpSocket(port: number): { fd: number } | { error: string } {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/udp", "/proc/net/udp6"]) {
    try {
      for (const inode of socketInodes(Deno.readTextFileSync(table), port)) inodes.add(inode);
    } catch {
      // no IPv6 (or no /proc): the other table may still have it
    }
  }
  if (inodes.size === 0) return { error: `no UDP socket on port ${port} in /proc/net/udp{,6}` };
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc/self/fd")];
  } catch (err) {
    return { error: `cannot list /proc/self/fd: ${(err as Error).message}` };
  }
  for (const entry of entries) {
    let link: string;
    try {
      link = Deno.readLinkSync(`/proc/self/fd/${entry.name}`);
    } catch {
      continue; // closed meanwhile
    }
    const inode = socketLinkInode(link);
    if (inode !== undefined && inodes.has(inode)) return { fd: Number(entry.name) };
  }
  return { error: `the UDP socket on port ${port} is not among this process's descriptors` };
}

/** Reading and setting `SO_RCVBUF` of one descriptor (injected for tests). */
export interface ReceiveBufferOps {
  /** The buffer's size as the kernel reports it (`getsockopt`: twice what was set), or an error. */
  get(fd: number): number | { error: string };
  /** Sets it with `SO_RCVBUF` or `SO_RCVBUFFORCE`; an error text (with errno) when refused. */
  set(fd: number, option: "SO_RCVBUF" | "SO_RCVBUFFORCE", bytes: number): string | undefined;
}

/** {@link ReceiveBufferOps} on the C library. */
export function libcReceiveBufferOps(libc: LibcSymbols): ReceiveBufferOps {
  return {
    get(fd) {
      const value = new Int32Array(1);
      const length = new Uint32Array([4]);
      if (libc.getsockopt(fd, SOL_SOCKET, SO_RCVBUF, value, length) !== 0) {
        return { error: `getsockopt(SO_RCVBUF) failed: ${lastErrno(libc)}` };
      }
      return value[0];
    },
    set(fd, option, bytes) {
      const name = option === "SO_RCVBUF" ? SO_RCVBUF : SO_RCVBUFFORCE;
      const value = new Int32Array([Math.min(bytes, 0x7fffffff)]);
      if (libc.setsockopt(fd, SOL_SOCKET, name, value, 4) === 0) return undefined;
      return `setsockopt(${option}) failed: ${lastErrno(libc)}`;
    },
  };
}

/** What {@link raiseReceiveBuffer} did. */
export interface ReceiveBufferOutcome {
  /** The size asked for, in bytes (0: the socket was left as the kernel made it). */
  wanted: number;
  /** The socket's buffer before, as `getsockopt` reports it. */
  before?: number;
  /** The socket's buffer now, as `getsockopt` reports it (Linux counts its bookkeeping in it). */
  bytes?: number;
  /** The call that raised it, when one did. */
  via?: "SO_RCVBUF" | "SO_RCVBUFFORCE";
  /** Why the buffer is below `wanted` (absent when it is not, or nothing was asked). */
  problem?: string;
}

/**
 * Raises the receive buffer of the descriptor `fd` to at least `wanted`
 * bytes (never lowers it): `SO_RCVBUF`, then `SO_RCVBUFFORCE` when the kernel
 * capped the first at twice `net.core.rmem_max`. Pure decision logic over
 * `ops`; see {@link raiseReceiveBuffer} for the socket of a port.
 */
export function raiseDescriptorBuffer(
  fd: number,
  wanted: number,
  ops: ReceiveBufferOps,
): ReceiveBufferOutcome {
  const before = ops.get(fd);
  if (typeof before !== "number") return { wanted, problem: before.error };
  if (before >= wanted) return { wanted, before, bytes: before };
  const problems: string[] = [];
  let bytes = before;
  let via: ReceiveBufferOutcome["via"];
  for (const option of ["SO_RCVBUF", "SO_RCVBUFFORCE"] as const) {
    const refused = ops.set(fd, option, wanted);
    const now = ops.get(fd);
    if (typeof now !== "number") return { wanted, before, bytes, via, problem: now.error };
    if (now > bytes) {
      bytes = now;
      via = option;
    }
    if (bytes >= wanted) return { wanted, before, bytes, via };
    problems.push(refused ?? `${option} gave ${now} bytes${CAPPED_BY[option]}`);
  }
  return { wanted, before, bytes, via, problem: problems.join("; ") };
}

/** Why a call that succeeded gave less than asked. */
const CAPPED_BY = {
  SO_RCVBUF: " (the kernel caps it at twice net.core.rmem_max)",
  SO_RCVBUFFORCE: "",
} as const;

/**
 * Raises the receive buffer of this process's UDP socket on `port` to at
 * least `wanted` bytes (`0`: leaves it alone and only reads it). Never throws.
 *
 * @example
 * ```ts
 * const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
 * const r = raiseReceiveBuffer(endpoint.addr.port, WANTED_RECEIVE_BUFFER);
 * r.bytes; // 14680064 as root (SO_RCVBUFFORCE), 2 × rmem_max otherwise
 * r.problem; // undefined when it got 7 MiB
 * ```
 */
export function raiseReceiveBuffer(port: number, wanted: number): ReceiveBufferOutcome {
  const asked = Math.max(0, wanted);
  const c = openLibc();
  if ("error" in c) return { wanted: asked, problem: c.error };
  const socket = findUdpSocket(port);
  if ("error" in socket) return { wanted: asked, problem: socket.error };
  const ops = libcReceiveBufferOps(c.libc);
  if (asked > 0) return raiseDescriptorBuffer(socket.fd, asked, ops);
  const now = ops.get(socket.fd);
  return typeof now === "number" ? { wanted: 0, before: now, bytes: now } : { wanted: 0 };
}

/**
 * A function that sets the receive buffer of this process's UDP socket on
 * `port` to about `bytes` and returns the size `getsockopt` reads back
 * (`undefined` when it cannot be read): lowered with `SO_RCVBUF` (the kernel
 * doubles the half asked for), raised as {@link raiseDescriptorBuffer} does.
 * `undefined` when the socket cannot be reached (see {@link raiseReceiveBuffer}).
 */
export function receiveBufferResizer(
  port: number,
): ((bytes: number) => number | undefined) | undefined {
  const c = openLibc();
  if ("error" in c) return undefined;
  const socket = findUdpSocket(port);
  if ("error" in socket) return undefined;
  const ops = libcReceiveBufferOps(c.libc);
  return (bytes) => resizeDescriptorBuffer(socket.fd, bytes, ops);
}

/** Sets the buffer of `fd` to about `bytes` (see {@link receiveBufferResizer}). */
export function resizeDescriptorBuffer(
  fd: number,
  bytes: number,
  ops: ReceiveBufferOps,
): number | undefined {
  const now = ops.get(fd);
  if (typeof now !== "number") return undefined;
  if (bytes < now) ops.set(fd, "SO_RCVBUF", Math.ceil(bytes / 2));
  else if (bytes > now) raiseDescriptorBuffer(fd, bytes, ops);
  const after = ops.get(fd);
  return typeof after === "number" ? after : undefined;
}
