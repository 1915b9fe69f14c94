/**
 * `deno task compile`: single binaries `dist/spooky` (the proxy) and
 * `dist/payments` with `deno compile`.
 *
 * `deno compile` embeds the program in `denort`, Deno's runtime binary, which
 * it downloads unless `DENORT_BIN` points at one. Where the download host is
 * unreachable (as on our CI machines), this task says so and exits 2.
 *
 * @module
 */
// deno-lint-ignore-file no-console

const ROOT = new URL("../", import.meta.url).pathname;

/** The binaries built, with their entry points and permissions. */
export const TARGETS = [
  { name: "spooky", entry: "proxy/main.ts" },
  { name: "payments", entry: "payments/main.ts" },
];

/** Exit code when the runtime cannot be obtained. */
export const EXIT_NO_RUNTIME = 2;

/** The explanation printed when `denort` cannot be downloaded. */
export function noRuntimeMessage(version: string): string {
  return [
    "deno compile could not download its runtime (denort) for Deno " + version + ":",
    "this machine cannot reach Deno's download host.",
    "Fetch denort-x86_64-unknown-linux-gnu.zip for Deno " + version +
    " on a machine that can, unzip it, and run:",
    "  DENORT_BIN=/path/to/denort deno task compile",
  ].join("\n");
}

async function main(): Promise<number> {
  await Deno.mkdir(`${ROOT}dist`, { recursive: true });
  for (const t of TARGETS) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "compile",
        "-A",
        "--unstable-net",
        "--unstable-kv",
        "--unstable-no-legacy-abort",
        "--output",
        `${ROOT}dist/${t.name}`,
        `${ROOT}${t.entry}`,
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr);
    if (out.code !== 0) {
      if (!Deno.env.get("DENORT_BIN") && /dns error|download|failed to lookup|connect/i.test(err)) {
        console.error(noRuntimeMessage(Deno.version.deno));
        return EXIT_NO_RUNTIME;
      }
      console.error(`deno compile ${t.entry} failed:\n${err}`);
      return 1;
    }
    console.log(`built dist/${t.name}`);
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
