/**
 * A bash script run by a test, as a reader of the docs would type it: its
 * exit code and output, and a time bound so a hung command fails the test.
 *
 * @example
 * ```ts
 * import { shell } from "./shell.ts";
 *
 * const r = await shell("echo hello", "/tmp");
 * console.log(r.code, r.stdout); // 0 "hello\n"
 * ```
 *
 * @module
 */

/** How a script ended and what it printed. */
export interface ShellResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `script` with `bash -c` in `cwd`; killed after `timeoutMs`. */
export async function shell(
  script: string,
  cwd?: string,
  timeoutMs = 60_000,
): Promise<ShellResult> {
  const out = await new Deno.Command("bash", {
    args: ["-c", script],
    cwd,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}
