/**
 * Taking over an HTTP/1.1 connection after its first request head, for what
 * the runtime's per-connection server cannot do: it ends its connection as
 * soon as hyper hands an upgraded stream over, and with it the upgraded
 * stream (measured on Deno 2.9.6: a `Deno.upgradeWebSocket` socket on
 * `serveHttpOnConnection` closes with 1005 within milliseconds of its 101,
 * before the client's first message; the same handler on `Deno.serve`'s
 * listener keeps it open), and Deno has no raw upgrade of its own.
 *
 * So `serveTlsConnections` may be given a {@link TakeOver}: on a connection
 * that did not negotiate h2, the relay reads the first request head itself
 * ({@link readFirstHead}, bounded) and offers it; a connection the hook
 * takes is its own from then on (the hook answers on it, and relays what
 * follows), one it leaves is served by the runtime as before, through a
 * {@link RuntimePipe}: the bytes already read, then the rest of the
 * connection, copied to a Unix socket the runtime's server reads (one more
 * copy of each byte of such a connection: the price of reading its head).
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 * const first = await readFirstHead(conn, 16 * 1024);
 * if (first !== null) first.bytes.subarray(0, first.headEnd); // the head, CRLF CRLF included
 * ```
 *
 * @module
 */

import { concatBytes, writeAll } from "./bytes.ts";

/** A connection the hook took: how the connection table sees it until it ends. */
export interface TakenConnection {
  /** Settles once the connection is closed. */
  readonly finished: Promise<void>;
  /** The server drains: finish what is under way (a tunnel may run until {@link close}). */
  shutdown(): Promise<void>;
  /** Closes the connection at once. */
  close(): void;
}

/**
 * Offered the first request head of an HTTP/1.1 connection: `bytes` holds
 * it (`headEnd`: the index past its CRLF CRLF) and whatever followed it in
 * the same reads; `remote` is the client's address. Returns the connection
 * it takes (it then owns `conn`), or `null` to leave it to the runtime.
 */
export type TakeOver = (
  bytes: Uint8Array,
  headEnd: number,
  conn: Deno.Conn,
  remote: Deno.NetAddr,
) => TakenConnection | null;

/** The first bytes of a connection up to its first CRLF CRLF, and how far that goes. */
export interface FirstHead {
  /** The bytes read (the head and what came with it). */
  readonly bytes: Uint8Array;
  /** Index past the head's CRLF CRLF; -1 when `max` bytes held none (or the connection ended). */
  readonly headEnd: number;
}

const CRLF2 = [13, 10, 13, 10];

/** Index past the first CRLF CRLF of `b` at or after `from`, or -1. */
function headEndOf(b: Uint8Array, from: number): number {
  for (let i = Math.max(0, from); i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i + 4;
  }
  return -1;
}

/**
 * Reads `conn` until its first request head is complete or `max` bytes
 * came without one (then `headEnd` is -1: not a head worth offering).
 * `null` when the connection ended or failed before any byte.
 */
export async function readFirstHead(conn: Deno.Conn, max: number): Promise<FirstHead | null> {
  let bytes: Uint8Array = new Uint8Array(0);
  const buf = new Uint8Array(Math.min(max, 16 * 1024));
  while (bytes.length < max) {
    let n: number | null;
    try {
      n = await conn.read(buf);
    } catch {
      n = null;
    }
    if (n === null) return bytes.length === 0 ? null : { bytes, headEnd: -1 };
    const from = bytes.length - (CRLF2.length - 1);
    bytes = concatBytes(bytes, buf.subarray(0, n));
    const end = headEndOf(bytes, from);
    if (end >= 0) return { bytes, headEnd: end };
  }
  return { bytes, headEnd: -1 };
}

/**
 * Unix-socket pipes to the runtime's per-connection server, for connections
 * whose first bytes were already read: a listener in a folder only this
 * user may enter, each pipe checked by a random token before it is served.
 * The listener is made at once, so a machine that cannot have one (no
 * writable temporary folder) fails at startup, not at the first connection.
 */
export class RuntimePipe {
  readonly #listener: Deno.Listener;
  readonly #dir: string;
  readonly #path: string;
  /** Connects are made one at a time, so each accept is the connect just made. */
  #turn: Promise<unknown> = Promise.resolve();

  /** Opens the listener (throws when it cannot). */
  constructor() {
    this.#dir = Deno.makeTempDirSync({ prefix: "spooky-pipe-" });
    this.#path = `${this.#dir}/runtime.sock`;
    this.#listener = Deno.listen({ transport: "unix", path: this.#path });
  }

  /**
   * A connection for the runtime's server that carries `prefix`, then
   * everything `from` sends; what the runtime answers goes back to `from`.
   * Both close when either side ends.
   */
  async open(from: Deno.Conn, prefix: Uint8Array): Promise<Deno.Conn> {
    const pair = this.#turn.then(() => this.#pair());
    this.#turn = pair.catch(() => {});
    const { near, far } = await pair;
    // Each side's end is passed on (a half-close); both ended, both close.
    let left = 2;
    const ended = () => {
      if (--left === 0) closeBoth(from, near);
    };
    pump(from, near, prefix).finally(ended);
    pump(near, from, null).finally(ended);
    return far;
  }

  /** A connected pair: `near` ours, `far` the accepted end, checked by token. */
  async #pair(): Promise<{ near: Deno.Conn; far: Deno.Conn }> {
    const listener = this.#listener;
    const token = crypto.getRandomValues(new Uint8Array(16));
    const near = await Deno.connect({ transport: "unix", path: this.#path });
    await near.write(token);
    for (;;) {
      const far = await listener.accept();
      if (await hasToken(far, token)) return { near, far };
      try {
        far.close(); // another process of this user: never served
      } catch { /* closed */ }
    }
  }

  /** Closes the listener and removes its folder (pipes open go on). */
  close(): void {
    try {
      this.#listener.close();
    } catch { /* closed */ }
    try {
      Deno.removeSync(this.#dir, { recursive: true });
    } catch { /* gone */ }
  }
}

/** Reads exactly `token.length` bytes from `conn` and compares them. */
async function hasToken(conn: Deno.Conn, token: Uint8Array): Promise<boolean> {
  const got = new Uint8Array(token.length);
  let at = 0;
  while (at < got.length) {
    const n = await conn.read(got.subarray(at)).catch(() => null);
    if (n === null) return false;
    at += n;
  }
  return got.every((b, i) => b === token[i]);
}

/** Copies `from` to `to` (after `prefix`); its end half-closes `to`, a failure closes both. */
async function pump(from: Deno.Conn, to: Deno.Conn, prefix: Uint8Array | null): Promise<void> {
  const buf = new Uint8Array(16 * 1024);
  try {
    if (prefix !== null) await writeAll(to, prefix);
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      await writeAll(to, buf.subarray(0, n));
    }
    await (to as Deno.TcpConn).closeWrite();
  } catch {
    closeBoth(from, to);
  }
}

function closeBoth(a: Deno.Conn, b: Deno.Conn): void {
  for (const c of [a, b]) {
    try {
      c.close();
    } catch { /* closed */ }
  }
}
