/**
 * A misbehaving HTTP/1.1 backend for fault tests: a raw TCP socket that
 * reads each request head and answers it by breaking RFC 9112 (or RFC 9110)
 * in one chosen way: response splitting, Content-Length with
 * Transfer-Encoding, differing lengths, huge and endless heads, an endless
 * chunk-size line, an endless chunked body, a flood of 1xx, an early close
 * mid-body, bytes after the response. Each {@link EvilH1Case} names the
 * status the client must get; `startEvilH1Backend(case)` serves one case on
 * its own loopback port.
 *
 * @example
 * ```ts
 * const evil = startEvilH1Backend(EVIL_H1_CASES[0]);
 * // route a proxy pool (protocol: http1) to evil.address, expect 502
 * await evil.close();
 * ```
 *
 * @module
 */

const ENC = new TextEncoder();

/** One way of breaking HTTP/1.1. */
export interface EvilH1Case {
  /** Short id (also the pool name and path prefix in the fault test). */
  readonly name: string;
  /** What the backend does. */
  readonly description: string;
  /**
   * What the client must see: 502 before any head, or the head's status
   * with a body that does not end cleanly (`truncated`), or 200 in full.
   */
  readonly expect: 502 | "truncated" | 200;
  /** Answers one request on `conn` (its head already read). */
  readonly answer: (conn: Deno.Conn) => Promise<void>;
}

/** Writes `text` (latin-1 as bytes). */
function write(conn: Deno.Conn, text: string): Promise<number> {
  return conn.write(ENC.encode(text));
}

/** Writes `make()` until the peer stops taking it (the proxy closed the connection). */
async function forever(conn: Deno.Conn, make: () => Uint8Array): Promise<void> {
  for (let i = 0; i < 1_000_000; i++) await conn.write(make());
}

/** The corpus. */
export const EVIL_H1_CASES: readonly EvilH1Case[] = [
  {
    name: "split_bare_lf",
    description: "response splitting: a bare LF smuggles a second field line",
    expect: 502,
    answer: async (c) =>
      void await write(
        c,
        "HTTP/1.1 200 OK\r\nx-a: 1\nset-cookie: evil=1\r\ncontent-length: 2\r\n\r\nok",
      ),
  },
  {
    name: "split_two_responses",
    description: "response splitting: a second response glued after the first (bytes after it)",
    expect: 200,
    answer: async (c) =>
      void await write(
        c,
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 302 Found\r\nlocation: http://evil/\r\ncontent-length: 0\r\n\r\n",
      ),
  },
  {
    name: "cl_te",
    description: "Content-Length and Transfer-Encoding: chunked together",
    expect: 502,
    answer: async (c) =>
      void await write(
        c,
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      ),
  },
  {
    name: "two_lengths",
    description: "two different Content-Lengths",
    expect: 502,
    answer: async (c) =>
      void await write(c, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nokk"),
  },
  {
    name: "huge_header",
    description: "a field value of 1 MiB",
    expect: 502,
    answer: async (c) =>
      void await write(
        c,
        `HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(1 << 20)}\r\ncontent-length: 0\r\n\r\n`,
      ),
  },
  {
    name: "endless_headers",
    description: "field lines, never a blank line",
    expect: 502,
    answer: async (c) => {
      await write(c, "HTTP/1.1 200 OK\r\n");
      let i = 0;
      await forever(c, () => ENC.encode(`x-${i++}: ${"v".repeat(100)}\r\n`));
    },
  },
  {
    name: "endless_chunk_line",
    description: "a chunk-size line that never ends (an endless extension)",
    expect: "truncated",
    answer: async (c) => {
      await write(c, "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;ext=");
      await forever(c, () => ENC.encode("x".repeat(1024)));
    },
  },
  {
    name: "endless_chunked",
    description: "a chunked body that never ends, streamed (the client stops reading at 4 MiB)",
    expect: "truncated",
    answer: async (c) => {
      await write(c, "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
      const chunk = ENC.encode(`4000\r\n${"z".repeat(0x4000)}\r\n`);
      await forever(c, () => chunk);
    },
  },
  {
    name: "informational_flood",
    description: "a thousand 100 Continue before the answer",
    expect: 502,
    answer: async (c) =>
      void await write(
        c,
        "HTTP/1.1 100 Continue\r\n\r\n".repeat(1000) +
          "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
      ),
  },
  {
    name: "early_close",
    description: "closes mid-body (10 of 1000 bytes)",
    expect: 502,
    answer: async (c) => {
      await write(c, `HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n${"b".repeat(10)}`);
      c.close();
    },
  },
  {
    name: "early_close_streamed",
    description: "closes mid-body of a streamed response (100 KiB of 1 MiB)",
    expect: "truncated",
    answer: async (c) => {
      await write(c, `HTTP/1.1 200 OK\r\ncontent-length: ${1 << 20}\r\n\r\n`);
      await c.write(new Uint8Array(100 * 1024));
      c.close();
    },
  },
  {
    name: "not_http",
    description: "garbage instead of a status line",
    expect: 502,
    answer: async (c) => void await write(c, "SSH-2.0-OpenSSH_9.2\r\n\r\n"),
  },
];

/** A running evil backend. */
export interface EvilH1Backend {
  readonly case: EvilH1Case;
  /** `127.0.0.1:port`. */
  readonly address: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Request heads read so far. */
  requests(): number;
  /** Connections that ended so far (closed by either side). */
  ended(): number;
  close(): Promise<void>;
}

/** Reads one request head (through its blank line); false when the connection ended first. */
async function readHead(conn: Deno.Conn, buf: Uint8Array): Promise<boolean> {
  let text = "";
  while (!text.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) return false;
    text += new TextDecoder().decode(buf.subarray(0, n));
    if (text.length > 1 << 20) return false;
  }
  return true;
}

/** Serves `c` on its own loopback port. */
export function startEvilH1Backend(c: EvilH1Case): EvilH1Backend {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let accepted = 0;
  let requests = 0;
  let ended = 0;
  const serve = async (conn: Deno.Conn) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      while (await readHead(conn, buf)) {
        requests++;
        await c.answer(conn);
      }
    } catch {
      /* the proxy closed it */
    } finally {
      ended++;
      conns.delete(conn);
      try {
        conn.close();
      } catch { /* closed */ }
    }
  };
  const loop = (async () => {
    for await (const conn of listener) {
      accepted++;
      conns.add(conn);
      serve(conn);
    }
  })().catch(() => {});
  return {
    case: c,
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    connections: () => accepted,
    requests: () => requests,
    ended: () => ended,
    async close() {
      listener.close();
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed */ }
      }
      await loop;
    },
  };
}
