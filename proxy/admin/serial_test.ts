import assert from "node:assert/strict";
import { serialRuns } from "./serial.ts";

Deno.test("serialRuns: a request during a run gets a later run of its own; requests meanwhile share it", async () => {
  let runs = 0;
  let active = 0;
  const gates: PromiseWithResolvers<void>[] = [];
  const run = serialRuns(async () => {
    const n = ++runs;
    active++;
    assert.equal(active, 1, "never two runs at once");
    const gate = Promise.withResolvers<void>();
    gates.push(gate);
    await gate.promise;
    active--;
    return n;
  });
  const first = run();
  const second = run(); // asked during run 1
  const third = run(); // also during run 1: shares run 2
  assert.equal(runs, 1);
  gates[0].resolve();
  assert.equal(await first, 1);
  await Promise.resolve();
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(runs, 2);
  const fourth = run(); // during run 2: run 3
  gates[1].resolve();
  assert.deepEqual(await Promise.all([second, third]), [2, 2]);
  await new Promise((r) => setTimeout(r, 0));
  gates[2].resolve();
  assert.equal(await fourth, 3);
  // Idle again: a request runs at once.
  const fifth = run();
  assert.equal(runs, 4);
  gates[3].resolve();
  assert.equal(await fifth, 4);
});

Deno.test("serialRuns: a failed run does not stop the next one", async () => {
  let runs = 0;
  const run = serialRuns(async () => {
    runs++;
    await new Promise((r) => setTimeout(r, 5));
    if (runs === 1) throw new Error("boom");
    return runs;
  });
  const first = run();
  const second = run();
  await assert.rejects(first, /boom/);
  assert.equal(await second, 2);
});
