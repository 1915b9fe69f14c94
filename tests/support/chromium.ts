/**
 * Headless Chromium (Debian package `chromium`) for browser tests: forced to
 * HTTP/3 for one origin, trusting the dev certificate by its SPKI pin.
 *
 * @module
 */

/** Options of {@link chromiumDumpDom}. */
export interface ChromiumOptions {
  /** `host:port` to force onto QUIC. */
  quicOrigin: string;
  /** Base64 SHA-256 SPKI pin of the server certificate. */
  spkiPin: string;
  /** Milliseconds of virtual time for scripts to run. */
  budgetMs?: number;
  /** Extra command-line flags. */
  extra?: string[];
}

/** The path of the Chromium binary, or `null` when it is not installed. */
export function chromiumPath(): string | null {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    try {
      Deno.statSync(p);
      return p;
    } catch {
      // try the next
    }
  }
  return null;
}

/** Loads `url` and returns the serialized DOM after scripts ran, plus stderr. */
export async function chromiumDumpDom(
  url: string,
  opts: ChromiumOptions,
): Promise<{ dom: string; stderr: string; code: number }> {
  const bin = chromiumPath();
  if (!bin) throw new Error("chromium is not installed (apt-get install -y chromium)");
  const profile = await Deno.makeTempDir({ prefix: "spooky-chromium-" });
  try {
    const out = await new Deno.Command(bin, {
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        `--user-data-dir=${profile}`,
        "--enable-quic",
        `--origin-to-force-quic-on=${opts.quicOrigin}`,
        `--ignore-certificate-errors-spki-list=${opts.spkiPin}`,
        "--host-resolver-rules=MAP localhost 127.0.0.1",
        `--virtual-time-budget=${opts.budgetMs ?? 10_000}`,
        ...(opts.extra ?? []),
        "--dump-dom",
        url,
      ],
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
      signal: AbortSignal.timeout(60_000),
    }).output();
    return {
      dom: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
      code: out.code,
    };
  } finally {
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  }
}
