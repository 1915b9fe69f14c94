import assert from "node:assert/strict";
import { FloodBufferGuard } from "./flood_buffer.ts";
import { sleep } from "../../tests/support/wait.ts";

function guard() {
  const sizes: number[] = [];
  const changes: boolean[] = [];
  const g = new FloodBufferGuard({
    calmBytes: 8 << 20,
    bytesNow: 8 << 20,
    floodBytes: 212992,
    resize: (bytes) => (sizes.push(bytes), bytes),
    calmMs: 300,
    now: () => performance.now(),
    onChange: (flooding) => changes.push(flooding),
  });
  return { g, sizes, changes };
}

Deno.test("#35.7: Initials shed from a full table or ignored lower the receive buffer once, until none is for calmMs", async () => {
  const { g, sizes, changes } = guard();
  try {
    g.rejected("handshakes");
    for (let i = 0; i < 100; i++) g.rejected("handshake_rate");
    assert.deepEqual(sizes, [212992]); // lowered once, however many
    assert.equal(g.bytes, 212992);
    assert.equal(g.flooding, true);
    // The flood goes on: it stays lowered past calmMs from its start.
    for (let i = 0; i < 5; i++) {
      await sleep(100);
      g.rejected("network_handshakes");
    }
    assert.deepEqual(sizes, [212992]);
    await sleep(600); // calm for longer than calmMs
    assert.deepEqual(sizes, [212992, 8 << 20]);
    assert.deepEqual(changes, [true, false]);
    assert.equal(g.bytes, 8 << 20);
    g.rejected("address_handshakes"); // the next flood
    assert.deepEqual(sizes, [212992, 8 << 20, 212992]);
  } finally {
    g.stop();
  }
});

Deno.test("#35.7: other admission outcomes (a timeout, a per-address refusal, an idle reclaim) leave the buffer alone", () => {
  const { g, sizes } = guard();
  try {
    for (const r of ["handshake_timeout", "per_address", "connections", "idle_reclaim"] as const) {
      g.rejected(r);
    }
    assert.deepEqual(sizes, []);
    assert.equal(g.flooding, false);
    assert.equal(g.bytes, 8 << 20);
  } finally {
    g.stop();
  }
});
