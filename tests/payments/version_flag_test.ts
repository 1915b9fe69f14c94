/** Issue #21.7: `deno task payments --version` (and -V) prints the version and exits 0. */
import assert from "node:assert/strict";
import { VERSION } from "../../shared/version.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("payments: --version and -V print the version and exit 0, listening on nothing", async () => {
  for (const flag of ["--version", "-V"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}payments/main.ts`, flag],
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
      signal: AbortSignal.timeout(30_000),
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.equal(new TextDecoder().decode(out.stdout), `payments ${VERSION}\n`);
  }
});
