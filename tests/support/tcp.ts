/**
 * Raw TCP connections of a test on loopback, and what they learn about the
 * server's side: when it closed a connection, and which ports a process
 * listens on (Linux `/proc`).
 *
 * @example
 * ```ts
 * import { closedWithin, connect } from "./tcp.ts";
 *
 * const conn = await connect(8080);
 * const ms = await closedWithin(conn, 3000); // -1: still open after 3 s
 * ```
 *
 * @module
 */

/** A TCP connection to 127.0.0.1 at `port`. */
export function connect(port: number): Promise<Deno.Conn> {
  return Deno.connect({ hostname: "127.0.0.1", port });
}

/** Closes `conns`, ignoring those closed already (by the server, or by the test). */
export function closeAll(conns: Deno.Conn[]): void {
  for (const c of conns) {
    try {
      c.close();
    } catch {
      // closed already
    }
  }
}

/**
 * Milliseconds from `since` until the server closes `conn` (what it sends is
 * read and dropped), or -1 when it is still open `maxMs` after `since`. The
 * connection is closed either way.
 */
export async function closedWithin(
  conn: Deno.Conn,
  maxMs: number,
  since: number = performance.now(),
): Promise<number> {
  const buf = new Uint8Array(4096);
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    closeAll([conn]);
  }, Math.max(0, since + maxMs - performance.now()));
  try {
    while (await conn.read(buf) !== null) { /* drop */ }
  } catch {
    // reset by the server, or closed by the timer above
  } finally {
    clearTimeout(timer);
  }
  const t = performance.now() - since;
  closeAll([conn]);
  return late ? -1 : t;
}

/**
 * TCP ports process `pid` (default: this one) listens on, from its
 * descriptors and `/proc/<pid>/net/tcp{,6}`.
 */
export function listeningPorts(pid: number | "self" = "self"): Set<number> {
  const inodes = new Set<string>();
  for (const e of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/${pid}/fd/${e.name}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const file of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    for (const line of Deno.readTextFileSync(file).split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[3] === "0A" && inodes.has(f[9])) {
        ports.add(parseInt(f[1].split(":")[1], 16));
      }
    }
  }
  return ports;
}
