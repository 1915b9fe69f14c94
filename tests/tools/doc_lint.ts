/**
 * `deno doc --lint` on every package entry (each `mod.ts` the repository
 * tracks, outside `tests/`), one entry at a time: a type counts as public
 * only when the entry being checked exports it, so each package's page is
 * complete on its own.
 *
 * One kind of finding is accepted, and only for the types listed in
 * {@link OUTSIDE_TYPES}: a public signature naming a type that an npm package
 * defines (Hono's app and context, zod-openapi's route config). Such a type
 * cannot be made public here: re-exporting it pulls in the package's own
 * private types (Hono's base class). Our own types are never accepted: the
 * payments wire types are spelt out in `shared/payments_wire.ts` (the types
 * zod infers from the schemas are zod's `output<…>`) and re-exported by the
 * payments packages that name them.
 *
 * Usage: `deno task lint:docs` (exit 1 and every finding that is not listed).
 *
 * @module
 */
// deno-lint-ignore-file no-console

/** One `deno doc --lint` finding. */
export interface DocFinding {
  /** The rule, e.g. `private-type-ref` or `missing-jsdoc`. */
  rule: string;
  /** The message line after the rule. */
  message: string;
  /** `path:line:col` of the finding, the path relative to the root when inside it. */
  at: string;
  /** The whole block as printed, for the report. */
  text: string;
}

/** Types defined outside this repository's reach, by name, and where they come from. */
export const OUTSIDE_TYPES: readonly { type: string; from: string }[] = [
  { type: "Hono", from: "npm:hono" },
  { type: "Context", from: "npm:hono" },
  { type: "RouteConfig", from: "npm:@hono/zod-openapi" },
];

/** Splits `deno doc --lint` output (without colours) into findings. */
export function parseFindings(output: string, root: string): DocFinding[] {
  const out: DocFinding[] = [];
  const blocks = output.split(/^(?=error\[)/m).filter((b) => b.startsWith("error["));
  for (const block of blocks) {
    const head = /^error\[([\w-]+)\]: (.*)$/m.exec(block);
    const where = /-->\s+(\S+)/.exec(block);
    if (!head) continue;
    let at = where?.[1] ?? "?";
    const prefix = root.endsWith("/") ? root : `${root}/`;
    if (at.startsWith(prefix)) at = at.slice(prefix.length);
    const text = block.split(/\n\s*info:/)[0].trimEnd();
    out.push({ rule: head[1], message: head[2], at, text });
  }
  return out;
}

/** True when the finding is a reference to one of {@link OUTSIDE_TYPES}. */
export function isAccepted(f: DocFinding): boolean {
  if (f.rule !== "private-type-ref") return false;
  const name = /references private type '([^']+)'/.exec(f.message)?.[1];
  return OUTSIDE_TYPES.some((t) => t.type === name);
}

async function trackedEntries(root: string): Promise<string[]> {
  const { stdout } = await new Deno.Command("git", {
    args: ["ls-files", "mod.ts", "*/mod.ts"],
    cwd: root,
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(stdout).split("\n")
    .filter((f) => f !== "" && !f.startsWith("tests/"));
}

/** Runs `deno doc --lint` on one entry (relative to `root`), without colours. */
export async function lintEntry(
  root: string,
  entry: string,
): Promise<{ ok: boolean; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", entry],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { ok: code === 0, output: dec.decode(stdout) + dec.decode(stderr) };
}

if (import.meta.main) {
  const root = Deno.cwd();
  const entries = Deno.args.length > 0 ? Deno.args : await trackedEntries(root);
  let bad = 0;
  for (const entry of entries) {
    const { ok, output } = await lintEntry(root, entry);
    if (ok) continue;
    const findings = parseFindings(output, root);
    const left = findings.filter((f) => !isAccepted(f));
    if (findings.length === 0) {
      // deno doc failed without a finding (a module that does not resolve, …)
      bad++;
      console.error(`== ${entry}\n${output.trim()}`);
      continue;
    }
    for (const f of left) console.error(`== ${entry}\n${f.text}\n`);
    bad += left.length;
  }
  if (bad > 0) {
    console.error(`lint:docs: ${bad} finding(s) in ${entries.length} entries`);
    Deno.exit(1);
  }
  console.log(`lint:docs: ok (${entries.length} entries)`);
}
