/**
 * Reports the proxy's startup time (issue #21.6) once per test run: launch to
 * `Listening on` and to the first request served over HTTP/3. Only that it
 * starts and serves is asserted; the figures are printed, never bounded (a
 * busy CI machine would make any bound flaky). `bench/startup.ts` measures
 * several runs.
 */
// deno-lint-ignore-file no-console
import assert from "node:assert/strict";
import { measureStartup, startupSetup } from "./startup.ts";

Deno.test("startup: launch to the first request served over HTTP/3 (reported)", async () => {
  const setup = await startupSetup();
  try {
    const s = await measureStartup(setup.configPath, setup.caPem, 60_000);
    assert.ok(s.firstRequestMs >= s.listeningMs);
    console.log(
      `startup: listening after ${s.listeningMs.toFixed(0)} ms, first request served after ${
        s.firstRequestMs.toFixed(0)
      } ms`,
    );
  } finally {
    await setup.close();
  }
});
