import assert from "node:assert/strict";
import { backoffDelay, pause } from "./backoff.ts";

Deno.test("#30.2: backoff: full jitter under min(max, base × 2^n)", () => {
  const top = () => 0.999999;
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map((n) => backoffDelay(n, 25, 250, top)),
    [24, 49, 99, 199, 249, 249],
  );
  assert.equal(backoffDelay(3, 25, 250, () => 0), 0, "jitter reaches down to zero");
  assert.equal(backoffDelay(2, 25, 250, () => 0.5), 50);
  assert.equal(backoffDelay(7, 0, 250, top), 0, "base 0: no backoff");
  assert.equal(backoffDelay(1_000, 25, 250, top), 249, "no overflow for a large n");
});

Deno.test("#30.2: backoff: the wait ends at once, false, when the client leaves", async () => {
  const client = new AbortController();
  const waited = pause(60_000, client.signal);
  client.abort();
  assert.equal(await waited, false);
  assert.equal(await pause(1, new AbortController().signal), true);
  assert.equal(await pause(60_000, AbortSignal.abort()), false);
});
