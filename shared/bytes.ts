/**
 * Byte helpers shared by the proxy, the payments API and the tests. (The
 * HTTP/3 codec in `proxy/h3/` keeps its own `concatBytes`: it imports
 * nothing outside itself.)
 *
 * @module
 */

/** The parts, one after another, in a new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Read a byte stream to its end, keeping at most `limit` bytes. As soon as
 * the stream delivers more, it is cancelled and the result is `null`. Errors
 * of the stream reject.
 *
 * @example
 * ```ts
 * declare const request: Request;
 * const body = await readUpTo(request.body!, 64 * 1024);
 * if (body === null) throw new Error("too large");
 * ```
 */
export async function readUpTo(
  stream: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return concatBytes(...chunks);
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
}

/**
 * Writes `bytes` whole to `conn` (a socket's `write` may take only part of
 * them); rejects with the socket's error.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 * await writeAll(conn, new TextEncoder().encode("PING\r\n"));
 * ```
 */
export async function writeAll(
  conn: { write(p: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}
