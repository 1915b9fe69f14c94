import assert from "node:assert/strict";
import { PaymentsStore } from "./kv_store.ts";
import type { StoreTracing } from "./tracing.ts";

/** A {@link StoreTracing} that records what it wraps, and how each call ended. */
function recording(): { tracing: StoreTracing; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    tracing: {
      async commit(op, attempt, run) {
        const ok = await run();
        calls.push(`commit ${op} #${attempt} ${ok ? "committed" : "refused"}`);
        return ok;
      },
      async replay(op, run) {
        const reply = await run();
        calls.push(`replay ${op} ${reply === undefined ? "none" : `replayed ${reply.status}`}`);
        return reply;
      },
    },
  };
}

const plan = () =>
  Promise.resolve({
    checks: [],
    sets: [{ key: ["x"], value: 1 }],
    status: 201,
    body: { ok: true },
  });

Deno.test("#31.1: store tracing: a commit is wrapped; a repeat's refused commit and its replay are too", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const { tracing, calls } = recording();
    const store = new PaymentsStore(kv, { tracing });
    await store.change({ requestId: "k1", op: "createCharge", body: { a: 1 }, plan });
    const again = await store.change({ requestId: "k1", op: "createCharge", body: { a: 1 }, plan });
    assert.equal(again.replayed, true);
    await store.deleteIfExists(["x"]);
    assert.deepEqual(calls, [
      "commit createCharge #1 committed",
      "commit createCharge #1 refused",
      "replay createCharge replayed 201",
      "commit delete #1 committed",
    ]);
  } finally {
    kv.close();
  }
});

Deno.test("#31.1: store tracing: null traces nothing (the default when Deno exports no traces)", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const store = new PaymentsStore(kv, { tracing: null });
    const r = await store.change({ requestId: "k1", op: "createCharge", plan });
    assert.equal(r.status, 201);
  } finally {
    kv.close();
  }
});
