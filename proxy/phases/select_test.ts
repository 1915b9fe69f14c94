import assert from "node:assert/strict";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { ConfigSchema } from "../config/schema.ts";
import type { RequestHead } from "../http/mod.ts";
import { buildPools, PoolState } from "./pool.ts";
import { availability, type BackendHealth, noCandidate, selectCandidates } from "./select.ts";

const config = ConfigSchema.parse({
  version: 1,
  listen: { protocol: "http3", port: 9889, tls: { cert: "c.pem", key: "k.pem" } },
  upstream: {
    api: {
      route: { path_prefix: "/" },
      backends: [{ id: "a", address: "127.0.0.1:1" }, { id: "b", address: "127.0.0.1:2" }],
    },
  },
});
const head: RequestHead = { method: "GET", scheme: "https", path: "/", fields: [] };

Deno.test("select: available backends first; with every one ejected, the ejected ones (panic mode, logged once on entering and once on leaving)", async () => {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { buf: (r) => records.push(r) },
    loggers: [
      { category: ["proxy", "upstream"], sinks: ["buf"], lowestLevel: "info" },
      { category: ["logtape", "meta"], sinks: [], lowestLevel: "warning" },
    ],
  });
  try {
    const ejected = new Set<string>();
    const health: BackendHealth = {
      isAvailable: (id) => !ejected.has(id),
      isAvailableIgnoringEjection: () => true,
    };
    const state = new PoolState();
    const pool = buildPools(config, () => state).get("api")!;
    const available = availability(health);
    const ids = () => selectCandidates(pool, available, head, "/").map((b) => b.id).sort();

    assert.deepEqual(ids(), ["a", "b"]);
    ejected.add("a");
    assert.deepEqual(ids(), ["b"]);
    assert.equal(state.panic, false);
    ejected.add("b");
    for (let i = 0; i < 3; i++) assert.deepEqual(ids(), ["a", "b"]);
    assert.equal(state.panic, true);
    ejected.delete("b");
    assert.deepEqual(ids(), ["b"]);
    assert.equal(state.panic, false);
    const lines = records.map((r) => `${r.level} ${r.rawMessage}`);
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.match(lines[0], /^warning .*panic mode/);
    assert.match(lines[1], /^info .*panic mode over/);
  } finally {
    await reset();
  }
});

Deno.test("select: without panic mode (no ejection-blind test) an all-ejected pool has no candidate; the refusal says disabled or unhealthy", () => {
  const pool = buildPools(config, () => new PoolState()).get("api")!;
  const none = availability({ isAvailable: () => false });
  assert.deepEqual(selectCandidates(pool, none, head, "/"), []);
  assert.equal(noCandidate(pool, { isAvailable: () => false }).error, "no_healthy_backend");
  const disabled = { isAvailable: () => false, isEnabled: () => false };
  assert.equal(noCandidate(pool, disabled).error, "no_enabled_backend");
});
