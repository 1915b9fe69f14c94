/**
 * Runs `gtlsclient` (Debian ngtcp2-client), an independent HTTP/3 client, and
 * parses what it prints.
 *
 * @module
 */

/** The outcome of one gtlsclient run. */
export interface GtlsResult {
  code: number;
  /** `:status` of every response, in order of arrival. */
  statuses: number[];
  /** Everything printed (stdout + stderr). */
  output: string;
}

/** Options of {@link gtls}. */
export interface GtlsOptions {
  streams?: number;
  method?: string;
  data?: string;
  txLoss?: number;
  rxLoss?: number;
  timeoutMs?: number;
  extra?: string[];
  quiet?: boolean;
}

/** Requests `url` from 127.0.0.1:`port` and waits for all streams to close. */
export async function gtls(port: number, url: string, opts: GtlsOptions = {}): Promise<GtlsResult> {
  const args = [
    "--exit-on-all-streams-close",
    "--no-quic-dump",
    "--max-streams-bidi=1000",
    "--timeout=10s",
  ];
  if (opts.quiet !== false) args.push("--no-http-dump");
  if (opts.streams) args.push(`-n`, String(opts.streams));
  if (opts.method) args.push("-m", opts.method);
  if (opts.data) args.push("-d", opts.data);
  if (opts.txLoss) args.push("-t", String(opts.txLoss));
  if (opts.rxLoss) args.push("-r", String(opts.rxLoss));
  args.push(...(opts.extra ?? []), "127.0.0.1", String(port), url);
  const cmd = new Deno.Command("gtlsclient", {
    args,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(opts.timeoutMs ?? 60_000),
  });
  const out = await cmd.output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  const statuses = [...text.matchAll(/:status: (\d{3})/g)].map((m) => Number(m[1]));
  return { code: out.code, statuses, output: text };
}
