import assert from "node:assert/strict";
import { editDistance, knownKeys, nearestKey } from "./_hints.ts";
import { parseConfigText } from "./load.ts";
import { ConfigSchema } from "./schema.ts";

Deno.test("hints: the keys known at a path come from the schema, through records, lists and wrappers", () => {
  assert.ok(knownKeys(ConfigSchema, []).includes("passive_health"));
  assert.ok(knownKeys(ConfigSchema, ["upstream", "api", "backends", 0]).includes("health_check"));
  assert.ok(
    knownKeys(ConfigSchema, ["upstream", "api", "backends", 0, "health_check"]).includes(
      "interval",
    ),
  );
  assert.ok(knownKeys(ConfigSchema, ["log", "access"]).includes("format"));
  assert.ok(knownKeys(ConfigSchema, ["load_balancing"]).includes("key"));
  assert.deepEqual(knownKeys(ConfigSchema, ["nope"]), []);
});

Deno.test("hints: nearest key by edit distance, only when close", () => {
  assert.equal(editDistance("kitten", "sitting"), 3);
  assert.equal(editDistance("ab", "ba"), 1);
  assert.equal(
    nearestKey("healthcheck", ["id", "address", "weight", "health_check"]),
    "health_check",
  );
  assert.equal(nearestKey("health-check", ["id", "health_check"]), "health_check");
  assert.equal(nearestKey("adress", ["id", "address"]), "address");
  assert.equal(nearestKey("colour", ["id", "address", "weight"]), null);
});

Deno.test("hints: an unknown key in a file suggests the nearest known key at its level", () => {
  const r = parseConfigText(
    `version: 1
listen: {protocol: http3, tls: {cert: c, key: k}, prot: 1}
upstream:
  api:
    route: {path_prefix: /}
    backends: [{id: a, address: "127.0.0.1:1", healthcheck: {interval: 5}}]
passive_healht: {enabled: true}
zebra: 1
`,
    { checkFiles: false },
  );
  assert.equal(r.ok, false);
  const messages = r.ok || r.kind !== "invalid"
    ? []
    : r.problems.map((p) => `${p.path}: ${p.message}`);
  assert.deepEqual(messages, [
    "listen.prot: unknown key (did you mean `port`?)",
    "upstream.api.backends[0].healthcheck: unknown key (did you mean `health_check`?)",
    "passive_healht: unknown key (did you mean `passive_health`?)",
    "zebra: unknown key",
  ]);
});
