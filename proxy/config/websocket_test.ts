/**
 * #29.2: a pool's `websocket` (whether WebSockets pass, and their idle and
 * total limits): each problem named with its key path and line, the
 * accepted form defaulted.
 */
import assert from "node:assert/strict";
import { config, POOL_API_HEAD, problems } from "./_test_util.ts";

/** A valid configuration with `websocket` lines inserted at line 12. */
function withWebSocket(...lines: string[]): string {
  return [
    ...POOL_API_HEAD, // 1-7
    "    backends:", // 8
    "      - id: a", // 9
    "        address: 127.0.0.1:8081", // 10
    "    websocket:", // 11
    ...lines.map((l) => `      ${l}`), // 12 and on
    "",
  ].join("\n");
}

/** [what, the `websocket` lines, the problem's path under upstream.api.websocket, its line, a message part]. */
const REFUSED: Array<[string, string[], string, number, RegExp]> = [
  ["enabled that is no boolean", ["enabled: yes please"], "enabled", 12, /true or false/],
  ["an idle timeout of 0", ["idle_timeout_ms: 0"], "idle_timeout_ms", 12, /positive integer/],
  [
    "a fractional total limit",
    ["enabled: true", "max_duration_ms: 1.5"],
    "max_duration_ms",
    13,
    /positive integer/,
  ],
  ["an unknown key", ["idle_timeout: 5"], "idle_timeout", 12, /unknown key/],
];

for (const [what, lines, path, line, message] of REFUSED) {
  Deno.test(`#29.2: websocket refuses ${what}, named with its key and line`, () => {
    const found = problems(withWebSocket(...lines));
    assert.equal(found.length, 1, JSON.stringify(found));
    assert.equal(found[0].path, `upstream.api.websocket.${path}`);
    assert.equal(found[0].line, line);
    assert.match(found[0].message, message);
  });
}

Deno.test("#29.2: websocket defaults: enabled, 5 minutes idle, no total limit", () => {
  assert.deepEqual(config(withWebSocket("{}")).upstream.api.websocket, {
    enabled: true,
    idle_timeout_ms: 300_000,
  });
  assert.deepEqual(
    config(withWebSocket("enabled: false", "idle_timeout_ms: 1000", "max_duration_ms: 60000"))
      .upstream.api.websocket,
    { enabled: false, idle_timeout_ms: 1000, max_duration_ms: 60_000 },
  );
  const without = withWebSocket("{}").replace("    websocket:\n      {}\n", "");
  assert.equal(config(without).upstream.api.websocket, undefined, "absent: the defaults apply");
});
