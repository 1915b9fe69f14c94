/**
 * Internal: "did you mean" hints for unknown configuration keys. The keys
 * known at a key path are read from the schema itself (so a new key is
 * suggested as soon as it exists), and the nearest by edit distance is
 * offered when it is close enough to be a typo.
 * @module
 */
import type { z } from "zod";

/** The definition fields the walk reads (zod 4's `_zod.def`). */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  valueType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
}

const def = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Schema kinds that wrap one schema (`innerType`) and take the shape of its values. */
const WRAPPERS: ReadonlySet<string> = new Set([
  "optional",
  "nullable",
  "default",
  "prefault",
  "readonly",
  "catch",
  "nonoptional",
]);

/** The object schemas a value at `schema` may be (wrappers and pipes looked through). */
function objects(schema: z.ZodType, depth = 0): Array<Record<string, z.ZodType>> {
  if (depth > 16) return [];
  const d = def(schema);
  if (WRAPPERS.has(d.type)) return d.innerType ? objects(d.innerType, depth + 1) : [];
  switch (d.type) {
    case "object":
      return d.shape ? [d.shape] : [];
    case "pipe":
      return [
        ...(d.in ? objects(d.in, depth + 1) : []),
        ...(d.out ? objects(d.out, depth + 1) : []),
      ];
    case "union":
      return (d.options ?? []).flatMap((o) => objects(o, depth + 1));
    default:
      return [];
  }
}

/** The schema of the value one key (or list index) below `schema`. */
function child(schema: z.ZodType, key: PropertyKey, depth = 0): z.ZodType | undefined {
  if (depth > 16) return undefined;
  const d = def(schema);
  if (WRAPPERS.has(d.type)) return d.innerType ? child(d.innerType, key, depth + 1) : undefined;
  switch (d.type) {
    case "object":
      return typeof key === "string" ? d.shape?.[key] : undefined;
    case "record":
      return d.valueType;
    case "array":
      return d.element;
    case "pipe":
      return (d.in && child(d.in, key, depth + 1)) ?? (d.out && child(d.out, key, depth + 1));
    case "union":
      for (const o of d.options ?? []) {
        const c = child(o, key, depth + 1);
        if (c) return c;
      }
      return undefined;
    default:
      return undefined;
  }
}

/** Keys the schema knows for the mapping at `path` (empty when it is not a fixed mapping). */
export function knownKeys(root: z.ZodType, path: readonly PropertyKey[]): string[] {
  let schema: z.ZodType | undefined = root;
  for (const key of path) {
    schema = schema && child(schema, key);
    if (!schema) return [];
  }
  return [...new Set(objects(schema).flatMap((shape) => Object.keys(shape)))];
}

/** Levenshtein distance, with a swap of two neighbours counted as one edit. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0].push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, rows[i - 2][j - 2] + 1);
      }
      rows[i].push(d);
    }
  }
  return rows[a.length][b.length];
}

/**
 * The known key nearest to `key`, when it is close enough to be a typo: at
 * most a third of the longer name's letters differ (at least one), compared
 * case-insensitively with `-` and `_` alike; else `null`.
 *
 * @example
 * ```ts
 * nearestKey("healthcheck", ["id", "address", "weight", "health_check"]); // "health_check"
 * ```
 */
export function nearestKey(key: string, known: readonly string[]): string | null {
  const norm = (s: string) => s.toLowerCase().replaceAll("-", "_");
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(norm(key), norm(k));
    const allowed = Math.max(1, Math.floor(Math.max(key.length, k.length) / 3));
    if (d <= allowed && d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}
