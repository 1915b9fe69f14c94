import assert from "node:assert/strict";
import { GroupTrust } from "./group_trust.ts";

function trust(maxGroups = 100) {
  let t = 0;
  const clock = { advance: (ms: number) => (t += ms) };
  return { trust: new GroupTrust({ halfLifeMs: 1000, maxGroups }, () => t), clock };
}

Deno.test("#35.7: a group is trusted once it completes handshakes, and while it completes at least as many as fail", () => {
  const { trust: g } = trust();
  assert.equal(g.trusted("a"), false); // never seen
  g.completed("a");
  assert.equal(g.trusted("a"), true);
  g.failed("a");
  assert.equal(g.trusted("a"), true); // 1 completed, 1 failed
  g.failed("a");
  assert.equal(g.trusted("a"), false); // 1 completed, 2 failed
  g.completed("a");
  assert.equal(g.trusted("a"), true);
});

Deno.test("#35.7: failures of a group that never completed a handshake leave no record (a spoofed flood creates none)", () => {
  const { trust: g } = trust();
  for (let i = 0; i < 1000; i++) g.failed(`spoofed-${i}`);
  assert.equal(g.size, 0);
  assert.equal(g.trusted("spoofed-1"), false);
});

Deno.test("#35.7: the counts fade with time: old failures stop weighing, and a silent group is forgotten", () => {
  const { trust: g, clock } = trust();
  g.completed("a");
  g.failed("a");
  g.failed("a");
  g.failed("a");
  assert.equal(g.trusted("a"), false);
  clock.advance(1000); // halved: 0.5 completed, 1.5 failed
  g.completed("a"); // 1.5 completed
  assert.equal(g.trusted("a"), true);
  clock.advance(10_000); // 1.5 / 1024: forgotten
  assert.equal(g.trusted("a"), false);
  assert.equal(g.size, 0);
});

Deno.test("#35.7: records are bounded: the least recently completed group is dropped first", () => {
  const { trust: g } = trust(2);
  g.completed("a");
  g.completed("b");
  g.completed("a"); // a is now the most recent
  g.completed("c");
  assert.equal(g.size, 2);
  assert.equal(g.trusted("b"), false);
  assert.equal(g.trusted("a"), true);
  assert.equal(g.trusted("c"), true);
});
