import assert from "node:assert/strict";
import { BackendLoad, LoadTable, UNMEASURED_PENALTY } from "./load.ts";

const near = (got: number, want: number) =>
  assert.ok(Math.abs(got - want) < 1e-6 * Math.max(1, want), `${got} ≈ ${want}`);

Deno.test("#30.3: peak-EWMA: a slower answer is taken at once, a faster one with weight 1 - e^(-Δt/τ)", () => {
  const load = new BackendLoad(10_000);
  load.observe(10, 0);
  near(load.estimate(0), 10);
  load.observe(100, 0);
  near(load.estimate(0), 100);
  load.observe(50, 10_000); // one τ later: weight e^-1 on the old estimate, 1 - e^-1 on 50
  near(load.estimate(10_000), 100 * Math.exp(-1) + 50 * (1 - Math.exp(-1)));
});

Deno.test("#30.3: peak-EWMA: the estimate decays toward zero while the backend is left alone", () => {
  const load = new BackendLoad(1_000);
  load.observe(200, 0);
  near(load.estimate(1_000), 200 * Math.exp(-1));
  near(load.estimate(3_000), 200 * Math.exp(-3));
  assert.ok(load.estimate(60_000) < 1e-10);
});

Deno.test("#30.3: cost = estimate × (in flight + 1); never measured: 0 idle, the penalty once busy", () => {
  const load = new BackendLoad();
  assert.equal(load.cost(0), 0);
  load.inflight = 2;
  assert.equal(load.cost(0), UNMEASURED_PENALTY + 2);
  load.observe(10, 0);
  assert.equal(load.cost(0), 30);
});

Deno.test("#30.3: a failure counts as twice the estimate, and at least its own time", () => {
  const load = new BackendLoad();
  load.observeFailure(0, 0);
  near(load.estimate(0), 1);
  load.observe(50, 0);
  load.observeFailure(3, 0);
  near(load.estimate(0), 100);
  load.observeFailure(500, 0);
  near(load.estimate(0), 500);
});

Deno.test("#30.3: the table: started and ended move in flight; retain forgets removed idle backends only", () => {
  const table = new LoadTable(() => 0);
  const busy = table.started("gone-busy");
  table.ended(table.started("gone-idle"), 5, "ok");
  table.started("kept");
  table.retain(new Set(["kept"]));
  assert.equal(table.peek("gone-idle"), undefined);
  assert.equal(table.peek("gone-busy"), busy, "still in flight: kept until it ends");
  table.ended(busy, 1, "none");
  assert.equal(busy.inflight, 0);
  assert.equal(busy.measured, false, "`none` says nothing of the backend");
});
