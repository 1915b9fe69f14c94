/**
 * A pool's field rewriting (`headers.request`, `headers.response`),
 * compiled once per configuration generation and applied to each request
 * the pool forwards and each response its backends give: `remove`, then
 * `set` (replaces every field of the name), then `add` (appends). The
 * configuration refused every name a rule may not touch (pseudo-headers,
 * connection-specific fields, `content-length`), so no rule can break a
 * message's framing.
 *
 * A pool without rules has `null` here, and the hot path then does nothing
 * at all: no allocation, no copy.
 *
 * @example
 * ```ts
 * const rules = compileHeaderRules({ set: { "x-env": "prod" }, add: {}, remove: ["x-debug"] })!;
 * applyHeaderRules([["x-debug", "1"], ["accept", "*\/*"]], rules);
 * // [["accept", "*\/*"], ["x-env", "prod"]]
 * ```
 *
 * @module
 */

import type { HeaderRulesConfig } from "../config/types.ts";

/** One side's rules, ready to apply. */
export interface HeaderRules {
  /** Names whose fields are dropped: those of `remove` and those of `set`. */
  readonly drop: ReadonlySet<string>;
  /** Fields appended after the drop: `set`'s, then `add`'s. */
  readonly append: ReadonlyArray<readonly [string, string]>;
  /** `set.host`: the authority the backend is sent (HTTP/2 `:authority`, HTTP/1.1 `Host`). */
  readonly host: string | undefined;
}

/** Compiles one side's configured rules; `null` when there are none (or none given). */
export function compileHeaderRules(config: HeaderRulesConfig | undefined): HeaderRules | null {
  if (config === undefined) return null;
  const set = Object.entries(config.set);
  const add = Object.entries(config.add);
  if (set.length === 0 && add.length === 0 && config.remove.length === 0) return null;
  return {
    drop: new Set([...config.remove, ...set.map(([name]) => name)]),
    // `set.host` is the authority, which each protocol sends its own way.
    append: [...set.filter(([name]) => name !== "host"), ...add],
    host: config.set.host,
  };
}

/**
 * `fields` rewritten by `rules`: the dropped names filtered out (a new
 * array only when one is present), then the set and added fields appended.
 * `fields` itself may be modified: pass a list the caller owns.
 */
export function applyHeaderRules(
  fields: Array<[string, string]>,
  rules: HeaderRules,
): Array<[string, string]> {
  const drop = rules.drop;
  const out = fields.some((f) => drop.has(f[0])) ? fields.filter((f) => !drop.has(f[0])) : fields;
  for (const [name, value] of rules.append) out.push([name, value]);
  return out;
}
