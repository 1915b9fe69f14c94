/**
 * A test backend in its own process, so that a test can kill it abruptly
 * (SIGKILL): `deno run -A tests/faults/_backend_main.ts NAME` prints
 * `port <n>` once listening.
 *
 * @module
 */
// deno-lint-ignore-file no-console
import { startBackend } from "../support/backend.ts";

const be = startBackend(Deno.args[0] ?? "backend");
console.log(`port ${be.port}`);
