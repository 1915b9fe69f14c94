/**
 * Bodies of the upstream transport tests: a lazily generated request body
 * with a checkable pattern, a reader that counts a body and checks that
 * pattern, and a loopback port nobody listens on. The backends are in
 * `_test_wire_backend.ts` (either protocol).
 *
 * @module
 */

/** A port on loopback that nothing listens on (bound, then closed). */
export function refusedAddress(): string {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = l.addr as Deno.NetAddr;
  l.close();
  return `127.0.0.1:${port}`;
}

/**
 * A lazily generated body of `total` bytes in `chunk`-byte pieces (each a
 * fresh buffer, since a transport may transfer it); byte i is `i & 0xff`.
 * `onCancel` runs when the consumer cancels it, with the bytes it had taken.
 */
export function generatedBody(
  total: number,
  chunk = 64 * 1024,
  onCancel?: (taken: number) => void,
): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= total) return c.close();
      const n = Math.min(chunk, total - sent);
      const buf = new Uint8Array(n);
      for (let i = 0; i < n; i += 256) buf.set(PATTERN.subarray(0, Math.min(256, n - i)), i);
      sent += n;
      c.enqueue(buf);
    },
    cancel: () => onCancel?.(sent),
  }, { highWaterMark: 0 });
}

const PATTERN = Uint8Array.from({ length: 256 }, (_, i) => i);

/** Reads a stream to its end, counting bytes and checking the {@link generatedBody} pattern. */
export async function drainCounting(
  body: ReadableStream<Uint8Array>,
  onChunk?: () => void,
): Promise<{ bytes: number; patternOk: boolean }> {
  let bytes = 0;
  let patternOk = true;
  for await (const c of body) {
    if (
      patternOk && (c[0] !== (bytes & 0xff) || c[c.length - 1] !== ((bytes + c.length - 1) & 0xff))
    ) {
      patternOk = false;
    }
    bytes += c.byteLength;
    onChunk?.();
  }
  return { bytes, patternOk };
}
