/**
 * Turn zod validation failures into the payments error envelope: a missing
 * field is PMT-4002 `"<field> is required."`, anything else PMT-4000
 * `"<field> is invalid."`, with the dotted field path in `detail`.
 *
 * @module
 */
import type { z } from "@hono/zod-openapi";
import { type ErrorDetail, invalidItem, leaf, PaymentsError, requiredItem } from "./errors.ts";

/** Marks a rule written by {@link ruleOf} (the field name is put in front of it). */
const OWN_RULE = "\u0001";

const A_TYPE: Record<string, string> = {
  string: "a string",
  number: "a number",
  boolean: 'true or false (a JSON boolean or "true"/"false")',
  object: "an object",
  array: "an array",
};

/** A list of allowed values as told to a person: `A, B or C`. */
function listed(values: readonly unknown[]): string {
  const v = values.map((x) => (typeof x === "string" ? x : JSON.stringify(x)));
  return v.length <= 1 ? (v[0] ?? "") : `${v.slice(0, -1).join(", ")} or ${v.at(-1)}`;
}

/**
 * The rule a value broke, for issues whose schema gave no words of its own
 * (zod's own wording, "Invalid input: expected boolean, received string",
 * never reaches a client): "be at most 500 characters", "be true or
 * false", ... {@link validate} puts the field name in front.
 */
function ruleOf(iss: {
  code?: string;
  expected?: string;
  origin?: string;
  maximum?: unknown;
  minimum?: unknown;
  values?: readonly unknown[];
  format?: string;
}): string {
  const n = (v: unknown) => String(v);
  switch (iss.code) {
    case "invalid_type":
      return `${OWN_RULE}be ${A_TYPE[iss.expected ?? ""] ?? `of type ${iss.expected}`}`;
    case "too_big":
      if (iss.origin === "string") return `${OWN_RULE}be at most ${n(iss.maximum)} characters`;
      if (iss.origin === "array") return `${OWN_RULE}have at most ${n(iss.maximum)} items`;
      return `${OWN_RULE}be at most ${n(iss.maximum)}`;
    case "too_small":
      if (iss.origin === "string") {
        return iss.minimum === 1
          ? `${OWN_RULE}not be empty`
          : `${OWN_RULE}be at least ${n(iss.minimum)} characters`;
      }
      if (iss.origin === "array") return `${OWN_RULE}have at least ${n(iss.minimum)} items`;
      return `${OWN_RULE}be at least ${n(iss.minimum)}`;
    case "invalid_value":
      return `${OWN_RULE}be ${listed(iss.values ?? [])}`;
    case "invalid_format":
      return `${OWN_RULE}be in the expected format${iss.format ? ` (${iss.format})` : ""}`;
    case "invalid_union":
      return `${OWN_RULE}be one of the accepted forms`;
    default:
      return `${OWN_RULE}be valid`;
  }
}

/** The `moreInfo` of an issue at `path`: a schema's own rule, or the field named before ours. */
function moreInfoOf(message: string, path: string): string {
  return message.startsWith(OWN_RULE) ? `${leaf(path)} must ${message.slice(1)}` : message;
}

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
  const result = schema.safeParse(raw, { error: ruleOf });
  if (result.success) return result.data;
  const seen = new Set<string>();
  const items: ErrorDetail[] = [];
  for (const issue of result.error.issues) {
    const path = [prefix, ...issue.path.map(String)].filter((s) => s !== "").join(".") || "body";
    if (seen.has(path)) continue;
    seen.add(path);
    const missing = issue.path.length > 0 && valueAt(raw, issue.path) === undefined;
    items.push(
      missing ? requiredItem(path) : invalidItem(path, undefined, moreInfoOf(issue.message, path)),
    );
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
