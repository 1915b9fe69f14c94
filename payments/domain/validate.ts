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
  // An absent body (or JSON null) validates as an empty object.
  if (raw === undefined || raw === null) raw = {};
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const seen = new Set<string>();
  const items: ErrorDetail[] = [];
  for (const issue of result.error.issues) {
    const path = [prefix, ...issue.path.map(String)].filter((s) => s !== "").join(".") || "body";
    if (seen.has(path)) continue;
    seen.add(path);
    const missing = issue.path.length > 0 && valueAt(raw, issue.path) === undefined;
    items.push(missing ? requiredItem(path) : invalidItem(path, undefined, issue.message));
  }
  const kind = items.every((i) => i.code === "PMT-4002") ? "required" : "invalid";
  throw new PaymentsError(kind, 400, items);
}

/**
 * Exactly one of the fields `a` and `b` of a validated input must be given:
 * neither is 400 `<a> is required.`, both is 400 `<b> is invalid.`.
 */
export function oneOf(input: Record<string, unknown>, a: string, b: string): void {
  if (input[a] === undefined && input[b] === undefined) throw PaymentsError.required(a);
  if (input[a] !== undefined && input[b] !== undefined) {
    throw PaymentsError.invalid(b, undefined, `send ${a} or ${b}, not both`);
  }
}

/**
 * Lower the first letter of every key, down to `depth` levels, so that the
 * spec's capitalised e-check fields (`Amount`, `BankAccount`, ...) and lower
 * camelCase both work. A key given in both forms (`Amount` and `amount`) is
 * 400 `<key> is invalid.`: one of the two would silently lose.
 */
export function lowerFirstKeys(value: unknown, depth = 2, path = ""): unknown {
  if (depth <= 0 || value === null || typeof value !== "object" || Array.isArray(value)) {
    return value;
  }
  const out: Record<string, unknown> = {};
  const src = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(src)) {
    if (k === "__proto__") continue;
    const lower = k.charAt(0).toLowerCase() + k.slice(1);
    const at = path ? `${path}.${lower}` : lower;
    if (lower !== k && Object.hasOwn(src, lower)) {
      throw PaymentsError.invalid(at, undefined, `send ${lower} or ${k}, not both`);
    }
    out[lower] = lowerFirstKeys(v, depth - 1, at);
  }
  return out;
}
