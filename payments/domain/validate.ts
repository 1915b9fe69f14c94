/**
 * Turn zod validation failures into the payments error envelope: a missing
 * field is PMT-4002 `"<field> is required."`, anything else PMT-4000
 * `"<field> is invalid."`, with the dotted field path in `detail`.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import { type ErrorDetail, invalidItem, PaymentsError, requiredItem } from "./errors.ts";

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/**
 * Validate `raw` with `schema`; on failure throw a {@link PaymentsError}
 * listing every offending field once.
 *
 * @param prefix prepended to every field path (e.g. `"card"`).
 */
export function validate<S extends z.ZodType>(schema: S, raw: unknown, prefix = ""): z.infer<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const seen = new Set<string>();
  const items: ErrorDetail[] = [];
  for (const issue of result.error.issues) {
    const path = [prefix, ...issue.path.map(String)].filter((s) => s !== "").join(".") || "body";
    if (seen.has(path)) continue;
    seen.add(path);
    const missing = issue.path.length > 0 && valueAt(raw, issue.path) === undefined;
    items.push(missing ? requiredItem(path) : invalidItem(path));
  }
  const kind = items.every((i) => i.code === "PMT-4002") ? "required" : "invalid";
  throw new PaymentsError(kind, 400, items);
}

/**
 * Lower the first letter of every key, down to `depth` levels, so that the
 * spec's capitalised e-check fields (`Amount`, `BankAccount`, ...) and lower
 * camelCase both work. A lower camelCase key wins over its capitalised twin.
 */
export function lowerFirstKeys(value: unknown, depth = 2): unknown {
  if (depth <= 0 || value === null || typeof value !== "object" || Array.isArray(value)) {
    return value;
  }
  const out: Record<string, unknown> = {};
  const src = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(src)) {
    if (k === "__proto__") continue;
    const lower = k.charAt(0).toLowerCase() + k.slice(1);
    if (lower !== k && Object.hasOwn(src, lower)) continue;
    out[lower] = lowerFirstKeys(v, depth - 1);
  }
  return out;
}
