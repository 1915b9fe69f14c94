/**
 * The annotated example (`examples/proxy.yaml`) shows every key of the
 * configuration schema, and the configuration reference (docs/configuration.md)
 * names each of them: a key added to the schema without documentation fails
 * here.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { z } from "zod";
import { ConfigSchema } from "../../proxy/config/schema.ts";
import { parseConfigText } from "../../proxy/config/load.ts";

const ROOT = new URL("../../", import.meta.url);

/**
 * Keys the example shows only in a comment: `ca` is rejected, a global `key`
 * needs consistent-hash, an access log `file` would move the example's access
 * lines out of the log, and a backend's `tls.ca` and the admin `token` are
 * files and secrets of the operator's own (the example passes `--check` once
 * copied, with nothing but its certificate and key beside it).
 */
const COMMENTED_ONLY = new Set([
  "listen.tls.ca",
  "load_balancing.key",
  "log.access.file",
  "upstream.*.backends[].tls.ca",
  "admin.token",
  // #31: files of keys, tokens and client certificates, and where the
  // admin listener is reachable from and audited to, are the operator's own.
  "upstream.*.backends[].tls.cert",
  "upstream.*.backends[].tls.key",
  "upstream.*.auth",
  "upstream.*.auth.api_keys",
  "upstream.*.auth.api_keys.header",
  "upstream.*.auth.api_keys.keys_file",
  "upstream.*.auth.jwt",
  "upstream.*.auth.jwt.jwks_file",
  "upstream.*.auth.jwt.algorithms",
  "upstream.*.auth.jwt.issuers",
  "upstream.*.auth.jwt.audiences",
  "upstream.*.auth.jwt.clock_skew_s",
  "upstream.*.auth.jwt.required_claims",
  "upstream.*.auth.jwt.forward_claims",
  "upstream.*.auth.forward_credentials",
  "admin.tokens",
  "admin.tokens[].token_file",
  "admin.tokens[].role",
  "admin.allow",
  "admin.audit_log",
]);

/**
 * Every key path of a zod schema: `listen.tls.cert`, `upstream.*.route.host`
 * (`*` for a record's keys), `upstream.*.backends[].id` (`[]` for list items).
 */
function schemaKeyPaths(schema: z.ZodType, prefix = ""): string[] {
  // deno-lint-ignore no-explicit-any
  const def = (schema as any)._zod.def;
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
      return schemaKeyPaths(def.innerType, prefix);
    case "pipe": // a transform (`in` is the value as written) or a preprocess (`out` is)
      return [...new Set([...schemaKeyPaths(def.in, prefix), ...schemaKeyPaths(def.out, prefix)])];
    case "union":
      return [...new Set((def.options as z.ZodType[]).flatMap((o) => schemaKeyPaths(o, prefix)))];
    case "object": {
      const out: string[] = [];
      for (const [key, value] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        const path = prefix === "" ? key : `${prefix}.${key}`;
        out.push(path, ...schemaKeyPaths(value, path));
      }
      return out;
    }
    case "record":
      return schemaKeyPaths(def.valueType, `${prefix}.*`);
    case "array":
      return schemaKeyPaths(def.element, `${prefix}[]`);
    default:
      return [];
  }
}

/** True when the parsed YAML `value` has the key path (any record key, any list item). */
function hasPath(value: unknown, segments: string[]): boolean {
  if (segments.length === 0) return true;
  const [head, ...rest] = segments;
  if (typeof value !== "object" || value === null) return false;
  if (head === "*") return Object.values(value).some((v) => hasPath(v, rest));
  const listItem = head.endsWith("[]");
  const key = listItem ? head.slice(0, -2) : head;
  if (!Object.hasOwn(value, key)) return false;
  const child = (value as Record<string, unknown>)[key];
  if (!listItem) return hasPath(child, rest);
  return Array.isArray(child) && child.some((item) => hasPath(item, rest));
}

function segmentsOf(path: string): string[] {
  // `upstream.*.backends[].health_check` → ["upstream", "*", "backends[]", "health_check"]
  return path.split(".");
}

const example = await Deno.readTextFile(new URL("examples/proxy.yaml", ROOT));
const reference = await Deno.readTextFile(new URL("docs/configuration.md", ROOT));
const keys = schemaKeyPaths(ConfigSchema);

Deno.test("the schema walk finds nested keys of records and lists", () => {
  for (
    const k of [
      "listen.tls.cert",
      "listen.tcp_fallback",
      "upstream.*.route.host",
      "upstream.*.backends[].health_check.cooldown_ms",
      "admin.token",
      "passive_health.eject_ms",
      "limits.drain_timeout_ms",
      "log.file.path",
      "log.access.format",
    ]
  ) assert.ok(keys.includes(k), `${k} not found in ${keys.join(", ")}`);
});

Deno.test("examples/proxy.yaml shows every key of the configuration schema", () => {
  const value = parse(example);
  const missing = keys.filter((k) => !COMMENTED_ONLY.has(k) && !hasPath(value, segmentsOf(k)));
  assert.deepEqual(missing, [], `keys missing from examples/proxy.yaml: ${missing.join(", ")}`);
  for (const k of COMMENTED_ONLY) {
    const leaf = k.slice(k.lastIndexOf(".") + 1);
    assert.match(example, new RegExp(`^\\s*#\\s*${leaf}:`, "m"), `${k} shown in a comment`);
  }
});

Deno.test("examples/proxy.yaml is valid and calls nothing 'planned'", () => {
  const result = parseConfigText(example, { checkFiles: false });
  assert.ok(result.ok, JSON.stringify(result));
  assert.doesNotMatch(example, /planned|not served yet/i);
});

Deno.test("docs/configuration.md's reference names every key of the schema", () => {
  const start = reference.indexOf("\n## Configuration reference\n");
  assert.ok(start >= 0, "docs/configuration.md has a configuration reference");
  const end = reference.indexOf("\n## ", start + 1);
  const section = reference.slice(start, end < 0 ? undefined : end);
  const missing = keys.filter((k) => {
    const leaf = k.slice(k.lastIndexOf(".") + 1).replace("[]", "");
    return !section.includes(`\`${k.replaceAll("[]", "[]")}\``) &&
      !new RegExp(`\`[^\`]*\\b${leaf}\\b[^\`]*\``).test(section);
  });
  assert.deepEqual(missing, [], `docs/configuration.md does not document: ${missing.join(", ")}`);
});
