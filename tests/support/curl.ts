/**
 * curl against a proxy's TCP listener on loopback (the TCP fallback, the
 * admin listener): `localhost:<port>` resolves to 127.0.0.1, and curl gives
 * up after 20 s, so a stalled proxy fails the test instead of hanging it.
 *
 * @example
 * ```ts
 * import { curlLocal } from "./curl.ts";
 *
 * const r = await curlLocal(8443, ["-sk", "--http2", "https://localhost:8443/"]);
 * console.log(r.exit, r.stdout);
 * ```
 *
 * @module
 */

/** How curl exited and what it printed. */
export interface CurlResult {
  /** curl's exit code (0: a response came, whatever its status). */
  exit: number;
  stdout: string;
  stderr: string;
}

/** Runs curl with `args` (its own options and the URL) against `localhost:port`. */
export async function curlLocal(port: number, args: string[]): Promise<CurlResult> {
  const out = await new Deno.Command("curl", {
    args: ["--max-time", "20", "--resolve", `localhost:${port}:127.0.0.1`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { exit: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}
