/**
 * The external programs the tests run, each with the Debian package that
 * installs it: the one list `deno task test` checks before running anything
 * and `.ci/run` installs from (both through `scripts/check_tools.ts`), and
 * the names `tests/support/tools.ts` accepts.
 *
 * Programs every Debian system has (`bash`, `sh`, coreutils such as `mkfifo`,
 * `id`, `timeout`) are not listed.
 *
 * @module
 */

/** An external program the tests run. */
export interface Tool {
  /** The command's name, looked up on `PATH`. */
  readonly program: string;
  /** The Debian package that installs it. */
  readonly debianPackage: string;
  /** What the tests use it for. */
  readonly usedFor: string;
  /**
   * For a tool that is no program of its own (a library of another program):
   * a command, looked up on `PATH` like a program, that exits 0 once it is
   * installed; `program` is then only its name here.
   */
  readonly probe?: readonly string[];
}

/** Every external program the tests run, in the order the messages name them. */
export const TOOLS: readonly Tool[] = [
  {
    program: "gtlsclient",
    debianPackage: "ngtcp2-client",
    usedFor: "an independent HTTP/3 client",
  },
  { program: "nghttpd", debianPackage: "nghttp2-server", usedFor: "an HTTP/2 backend" },
  { program: "h2load", debianPackage: "nghttp2-client", usedFor: "HTTP/2 load (benchmarks)" },
  { program: "caddy", debianPackage: "caddy", usedFor: "an HTTP/2 backend and the bench peer" },
  { program: "node", debianPackage: "nodejs", usedFor: "Node's http2 server as a backend" },
  { program: "nginx", debianPackage: "nginx", usedFor: "an HTTP/1.1 backend" },
  {
    program: "python3",
    debianPackage: "python3",
    usedFor: "Python's http.server as an HTTP/1.1 backend",
  },
  {
    program: "python3-websockets",
    debianPackage: "python3-websockets",
    usedFor: "a WebSocket server and client (run by Debian's /usr/bin/python3)",
    // Debian's package, for Debian's python3 (a python3 first on PATH may be another's).
    probe: [
      "sh",
      "-c",
      "dpkg-query -W -f='${db:Status-Status}' python3-websockets 2>/dev/null | grep -qx installed",
    ],
  },
  { program: "npx", debianPackage: "npm", usedFor: "the README's demo command" },
  {
    program: "npm",
    debianPackage: "npm",
    usedFor: "where `npm install -g` puts Deno (the deployment units' test)",
  },
  { program: "chromium", debianPackage: "chromium", usedFor: "a browser over HTTP/3" },
  { program: "firefox-esr", debianPackage: "firefox-esr", usedFor: "a browser over HTTP/3" },
  {
    program: "certutil",
    debianPackage: "libnss3-tools",
    usedFor: "Firefox's trust of the test CA",
  },
  { program: "promtool", debianPackage: "prometheus", usedFor: "checking /metrics" },
  { program: "curl", debianPackage: "curl", usedFor: "the TCP fallback, as users call it" },
  {
    program: "openssl",
    debianPackage: "openssl",
    usedFor:
      "the certificate recipe of docs/getting-started.md; JWT signing keys and client certificates of the auth tests",
  },
  { program: "systemd-analyze", debianPackage: "systemd", usedFor: "verifying the systemd units" },
  { program: "prlimit", debianPackage: "util-linux", usedFor: "a proxy with few file descriptors" },
  { program: "setpriv", debianPackage: "util-linux", usedFor: "root without CAP_DAC_OVERRIDE" },
  { program: "git", debianPackage: "git", usedFor: "the tracked files (doc lint, demo clone)" },
];

/** The {@link Tool} entry of `program`, or `undefined` when the list does not have it. */
export function toolOf(program: string): Tool | undefined {
  return TOOLS.find((t) => t.program === program);
}
