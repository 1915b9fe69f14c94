/**
 * Internal: keys an earlier version of the proxy had and this one does not.
 * A configuration written for that version may still carry them: each is
 * taken out before the schema sees it (so it is not an `unknown key`), and
 * becomes an error that says what replaced it, or, when its value asks for
 * what the proxy now always does, a warning that the key is ignored.
 *
 * @module
 */

import type { KeyPath } from "./_yaml_lines.ts";

/** A key that was removed, and what a configuration that still has it is told. */
interface RemovedKey {
  /** Where it was: `limits.<key>`. */
  readonly key: string;
  /** Values that ask for what the proxy now always does: a warning, not an error. */
  readonly ignored: readonly unknown[];
  /** What replaced it (the error). */
  readonly replaced: string;
  /** What the proxy does instead of the key (the warning). */
  readonly instead: string;
}

const REMOVED_LIMITS: readonly RemovedKey[] = [
  {
    key: "upstream_workers",
    ignored: ["auto", 0],
    replaced: "was removed: upstream worker threads are gone, and the HTTP/2 exchanges " +
      "with backends run on the QUIC thread (a worker measured dearer); delete the key",
    instead: "the HTTP/2 exchanges with backends run on the QUIC thread",
  },
  {
    key: "upstream_client",
    ignored: ["spooky"],
    replaced: "was removed: the proxy's own HTTP/2 client carries every exchange with " +
      "backends (the node client, Deno's node:http2, is gone); delete the key",
    instead: "the proxy's own HTTP/2 client carries every exchange with backends",
  },
];

/** A removed key found in a configuration. */
export interface RemovedKeyFinding {
  /** Its key path. */
  readonly path: KeyPath;
  /** `error`: the configuration is refused; `warning`: the key is ignored. */
  readonly severity: "error" | "warning";
  /** What the operator is told. */
  readonly message: string;
}

/**
 * Takes every removed key out of `raw` (the parsed YAML, changed in place)
 * and says what each one found means.
 */
export function takeRemovedKeys(raw: unknown): RemovedKeyFinding[] {
  const limits = (raw as { limits?: unknown } | null)?.limits;
  if (typeof limits !== "object" || limits === null || Array.isArray(limits)) return [];
  const section = limits as Record<string, unknown>;
  const found: RemovedKeyFinding[] = [];
  for (const removed of REMOVED_LIMITS) {
    if (!Object.hasOwn(section, removed.key)) continue;
    const value = section[removed.key];
    delete section[removed.key];
    const ignored = removed.ignored.includes(value);
    found.push({
      path: ["limits", removed.key],
      severity: ignored ? "warning" : "error",
      message: ignored
        ? `ignored: the key was removed (${removed.instead}); delete it`
        : removed.replaced,
    });
  }
  return found;
}
