/**
 * The proxy's configuration schema: one zod schema that turns the parsed YAML
 * value into a {@link Config} with every default applied, plus a few small
 * address helpers shared by the proxy's packages. The output types are spelled
 * out and documented in `types.ts` (re-exported here); the compiler checks
 * that both agree.
 *
 * The schema checks shape, types, defaults and every rule that needs only the
 * value itself. Checks that touch the file system (certificate and key files)
 * live in `proxy/config/`, which also maps problems to YAML lines.
 *
 * Keys stay in snake_case, exactly as they are written in the YAML file.
 *
 * @example
 * ```ts
 * import { parse } from "yaml";
 * import { ConfigSchema } from "./schema.ts";
 *
 * const yamlValue: unknown = parse(await Deno.readTextFile("examples/proxy.yaml"));
 * const result = ConfigSchema.safeParse(yamlValue);
 * if (result.success) console.log(result.data.listen.port);
 * ```
 * @module
 */
import { z } from "zod";
import { DEFAULT_LOG_FILE, LEVEL_NAMES, lookupLevel } from "../../shared/logging.ts";
import {
  DEFAULT_HASH_KEY,
  formatHashKey,
  HASH_KEY_FORMS,
  parseHashKey,
} from "../balancer/hash_key.ts";
import { parseCidr } from "../../shared/cidr.ts";
import { fieldNameError, fieldValueError, HOP_BY_HOP, isToken } from "../http/mod.ts";
import { LOAD_BALANCING_TYPES, type LoadBalancingConfig } from "../balancer/types.ts";
import { DEFAULT_BUDGET_PERCENT, DEFAULT_MIN_RETRIES_PER_SECOND } from "../retry/budget.ts";
import { RETRY_ON_FAILURES } from "../retry/retry_on.ts";
import type {
  AccessLogConfig,
  AdminConfig,
  AdminReadyConfig,
  AdminTokenConfig,
  ApiKeysAuthConfig,
  AuthConfig,
  BackendConfig,
  Config,
  DnsConfig,
  HeaderRulesConfig,
  HeadersConfig,
  HealthCheckConfig,
  JwtAuthConfig,
  LimitsConfig,
  ListenConfig,
  LogConfig,
  PassiveHealthConfig,
  RateLimitConfig,
  RetriesConfig,
  RouteConfig,
  RouteHeaderCondition,
  TlsConfig,
  UpstreamConfig,
  WebSocketConfig,
} from "./types.ts";

export { DEFAULT_HASH_KEY, LOAD_BALANCING_TYPES };
export type * from "./types.ts";

// ---------------------------------------------------------------------------
// Address helpers
// ---------------------------------------------------------------------------

const IPV4_PART = /^(0|[1-9][0-9]{0,2})$/;
const HOST_LABEL = /^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;
const NUMERIC_LABEL = /^[0-9]+$/;
const IPV6_CHARS = /^[0-9A-Fa-f:.]+$/;
const PORT_DIGITS = /^[0-9]{1,5}$/;

/**
 * True when `s` is an IPv4 address in dotted-quad form (`127.0.0.1`).
 * Leading zeros are rejected because some resolvers read them as octal.
 */
export function isIPv4(s: string): boolean {
  const parts = s.split(".");
  return parts.length === 4 &&
    parts.every((p) => IPV4_PART.test(p) && Number(p) <= 255);
}

/** True when `s` is an IPv6 literal without brackets (`::1`, `2001:db8::5`). */
export function isIPv6(s: string): boolean {
  if (!s.includes(":") || !IPV6_CHARS.test(s)) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

/**
 * True when `s` is a DNS host name such as `localhost` or `api.example.com`.
 * Underscores are tolerated (container and service names use them); a name
 * made only of numeric labels must be a valid IPv4 address instead.
 */
export function isHostname(s: string): boolean {
  if (s.length === 0 || s.length > 253) return false;
  const labels = s.split(".");
  if (!labels.every((l) => HOST_LABEL.test(l))) return false;
  return !labels.every((l) => NUMERIC_LABEL.test(l));
}

/** True when `s` is an IPv4 address, an unbracketed IPv6 literal or a host name. */
export function isBindAddress(s: string): boolean {
  return isIPv4(s) || isIPv6(s) || isHostname(s);
}

function parsePort(s: string): number | null {
  if (!PORT_DIGITS.test(s)) return null;
  const port = Number(s);
  return port >= 1 && port <= 65535 ? port : null;
}

/**
 * Splits a `host:port` address. IPv6 literals must be in brackets
 * (`[::1]:8080`); the returned `host` has the brackets removed (`::1`), so put
 * them back when building a URL. Returns `null` unless the host is a valid IPv4
 * address, IPv6 literal or host name and the port is an integer 1–65535.
 *
 * @example
 * ```ts
 * parseHostPort("127.0.0.1:8081"); // { host: "127.0.0.1", port: 8081 }
 * parseHostPort("[::1]:8080");     // { host: "::1", port: 8080 }
 * parseHostPort("::1:8080");       // null (IPv6 needs brackets)
 * ```
 */
export function parseHostPort(address: string): { host: string; port: number } | null {
  let host: string;
  let portText: string;
  if (address.startsWith("[")) {
    const close = address.indexOf("]");
    if (close < 0 || address[close + 1] !== ":") return null;
    host = address.slice(1, close);
    portText = address.slice(close + 2);
    if (!isIPv6(host)) return null;
  } else {
    const colon = address.lastIndexOf(":");
    if (colon <= 0) return null;
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (!isIPv4(host) && !isHostname(host)) return null;
  }
  const port = parsePort(portText);
  return port === null ? null : { host, port };
}

/**
 * True when `s` is a valid `route.host` pattern: a host name, an IPv4
 * address, a bracketed IPv6 literal or a `*.example.com` wildcard, optionally
 * followed by `:port`.
 */
export function isRouteHost(s: string): boolean {
  let host = s;
  if (s.startsWith("[")) {
    const close = s.indexOf("]");
    if (close < 0) return false;
    const rest = s.slice(close + 1);
    if (rest !== "" && (rest[0] !== ":" || parsePort(rest.slice(1)) === null)) return false;
    return isIPv6(s.slice(1, close));
  }
  const colon = s.lastIndexOf(":");
  if (colon >= 0) {
    if (parsePort(s.slice(colon + 1)) === null) return false;
    host = s.slice(0, colon);
  }
  if (host.startsWith("*.")) return isHostname(host.slice(2));
  return isIPv4(host) || isHostname(host);
}

/** True when `path` has no whitespace, control characters, `?` or `#`. */
function isPlainPath(path: string): boolean {
  for (const ch of path) {
    const code = ch.codePointAt(0)!;
    if (code <= 0x20 || code === 0x7f || ch === "?" || ch === "#" || /\s/.test(ch)) return false;
  }
  return true;
}

/** Message given when `listen.tls.ca` is present. */
export const TLS_CA_REJECTED =
  "client certificate authentication is not supported: the QUIC runtime (Deno.QuicEndpoint) " +
  "cannot verify client certificates, so tls.ca cannot be honoured; remove it " +
  "(the proxy fails closed instead of accepting clients it cannot authenticate)";

// ---------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Integer in [min, max]. A refine (not `.int()`), so sibling and root checks still run. */
function int(min: number, max: number, message: string) {
  return z.number().refine((n) => Number.isInteger(n) && n >= min && n <= max, { message });
}

const MAX_INT = Number.MAX_SAFE_INTEGER;
const positiveInt = (what = "") =>
  int(1, MAX_INT, `must be a positive integer${what ? ` (${what})` : ""}`);
const nonNegativeInt = (what = "") =>
  int(0, MAX_INT, `must be an integer >= 0${what ? ` (${what})` : ""}`);
const nonEmpty = (message = "must not be empty") => z.string().min(1, { message });
/**
 * Makes a custom check run even after other fields of the same object failed,
 * as long as the value is an object at all.
 */
const ALWAYS = { when: (payload: { value: unknown }) => isRecord(payload.value) };

/** An IPv4 or IPv6 address or CIDR (`trusted_proxies`, `admin.allow`). */
function cidrString() {
  return z.string().refine((c) => typeof parseCidr(c) !== "string", {
    error: (issue) => {
      const why = parseCidr(String(issue.input));
      return `must be an IPv4 or IPv6 address or CIDR such as 10.0.0.0/8 or fd00::/8 (${why})`;
    },
  });
}

/** `listen.tls`: certificate and key paths. `ca` is always rejected. */
export const TlsConfigSchema = z.strictObject({
  cert: nonEmpty(),
  key: nonEmpty(),
  ca: z.never({ error: TLS_CA_REJECTED }).optional(),
});

const LISTEN_PORT_MESSAGE = "must be an integer port from 1 to 65535 (0 picks a free port)";

/** `listen`: the HTTP/3 listener. */
export const ListenConfigSchema = z.strictObject({
  protocol: z.literal("http3", {
    error: 'must be "http3" (the only supported protocol)',
  }),
  /** UDP port; 0 picks a free port (printed in `Listening on`), for tests and tools. */
  port: int(0, 65535, LISTEN_PORT_MESSAGE).default(9889),
  address: z.string().refine(isBindAddress, {
    message:
      "must be a bind address: an IPv4 address (0.0.0.0), an IPv6 literal without brackets (::) or a hostname (localhost)",
  }).default("0.0.0.0"),
  tls: TlsConfigSchema,
  /** Concurrent bidirectional streams a client may open per connection. */
  max_streams: positiveInt().default(256),
  /** QUIC idle timeout in milliseconds. */
  idle_timeout_ms: positiveInt("milliseconds").default(30000),
  /**
   * Also serve HTTP/2 and HTTP/1.1 over TCP+TLS on the same port number, with
   * `alt-svc: h3=":<port>"` on every response (browsers then switch to HTTP/3).
   */
  tcp_fallback: z.boolean().default(false),
});

const LoadBalancingInput = z.strictObject({
  type: z.enum(LOAD_BALANCING_TYPES, {
    error: `must be one of ${LOAD_BALANCING_TYPES.join(", ")}`,
  }),
  key: z.string().refine((k) => parseHashKey(k) !== null, {
    message: `must be ${HASH_KEY_FORMS}`,
  }).optional(),
});

/**
 * `load_balancing` (global or per pool). `key` is allowed only with
 * `consistent-hash`; when omitted there it defaults to {@link DEFAULT_HASH_KEY}
 * (`path`). Header names in the key are lowercased.
 */
export const LoadBalancingConfigSchema = LoadBalancingInput.superRefine((lb, ctx) => {
  if (
    lb.key !== undefined && LOAD_BALANCING_TYPES.includes(lb.type) && lb.type !== "consistent-hash"
  ) {
    ctx.addIssue({
      code: "custom",
      path: ["key"],
      message: `is only used with type consistent-hash (type is ${lb.type})`,
    });
  }
}, ALWAYS).transform((lb): LoadBalancingConfig => {
  if (lb.type !== "consistent-hash") return { type: lb.type };
  const text = lb.key ?? DEFAULT_HASH_KEY;
  const key = parseHashKey(text);
  return { type: "consistent-hash", key: key ? formatHashKey(key) : text };
});

/** Methods the proxy answers itself (501) before routing: a route cannot name them. */
const UNROUTED_METHODS = new Set(["TRACE", "TRACK", "CONNECT"]);

/** One `route.methods` entry: an uppercase method token the proxy forwards. */
const RouteMethodSchema = z.string().superRefine((m, ctx) => {
  if (!isToken(m) || m !== m.toUpperCase()) {
    ctx.addIssue({
      code: "custom",
      message:
        "must be an uppercase HTTP method token such as GET or POST (methods are case-sensitive)",
    });
  } else if (UNROUTED_METHODS.has(m)) {
    ctx.addIssue({
      code: "custom",
      message: `is answered 501 by the proxy before routing: no route can serve ${m}`,
    });
  }
});

/** A `route.headers` condition: an exact value, `{prefix: ...}` or `{present: true|false}`. */
const RouteHeaderConditionSchema = z.union([
  z.string(),
  z.strictObject({ prefix: nonEmpty() }),
  z.strictObject({ present: z.boolean() }),
], {
  error: "must be a value (exact match; quote numbers), {prefix: <value>} or {present: true|false}",
});

/** Why `name` may not be a `route.headers` key, or null. */
function routeHeaderNameError(name: string): string | null {
  if (name.startsWith(":")) {
    return "is a pseudo-header: route on it with host, path_prefix or methods";
  }
  const lower = name.toLowerCase();
  if (lower === "host") return "is the request's authority: route on it with route.host";
  const invalid = fieldNameError(lower);
  return invalid === null ? null : `is no valid field name: ${invalid}`;
}

/** Checks the names and values of `route.headers`; issues at `[name]`. */
function checkRouteHeaders(headers: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(headers)) return;
  const seen = new Map<string, string>();
  for (const [name, condition] of Object.entries(headers)) {
    const why = routeHeaderNameError(name);
    if (why !== null) {
      ctx.addIssue({ code: "custom", path: [name], message: why });
      continue;
    }
    const twin = seen.get(name.toLowerCase());
    if (twin !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [name],
        message: `names the same field as ${twin} (names are case-insensitive)`,
      });
    }
    seen.set(name.toLowerCase(), name);
    const value = typeof condition === "string"
      ? condition
      : isRecord(condition) && typeof condition.prefix === "string"
      ? condition.prefix
      : undefined;
    const bad = value === undefined ? null : fieldValueError(name.toLowerCase(), value);
    if (bad !== null) ctx.addIssue({ code: "custom", path: [name], message: bad });
  }
}

/**
 * `route.headers`: field name → condition, every one must hold. Names are
 * lowercased; pseudo-headers and `host` (use `route.host`) are refused.
 */
const RouteHeadersSchema = z.record(z.string(), RouteHeaderConditionSchema)
  .superRefine(checkRouteHeaders)
  .transform((h): Record<string, RouteHeaderCondition> => lowercaseKeys(h));

/**
 * `route`: how requests are matched to a pool. At least one of `host` and
 * `path_prefix` is required; `methods` and `headers` narrow it further.
 */
export const RouteConfigSchema = z.strictObject({
  host: z.string().refine(isRouteHost, {
    message: "must be a hostname or a *.example.com wildcard, with an optional :port",
  }).optional(),
  path_prefix: z.string()
    .refine((p) => p.startsWith("/"), { message: 'must start with "/"' })
    .refine(isPlainPath, {
      message: "must be a path without whitespace, control characters, ? or #",
    }).optional(),
  methods: z.array(RouteMethodSchema).min(1, {
    message: "must list at least one method (leave methods out to match any)",
  }).optional(),
  headers: RouteHeadersSchema.optional(),
}).superRefine((route, ctx) => {
  if (route.host === undefined && route.path_prefix === undefined) {
    ctx.addIssue({ code: "custom", message: "needs at least one of host and path_prefix" });
  }
}, ALWAYS);

/**
 * True when `s` may be sent as a request's authority (`host` with an
 * optional `:port`; IPv6 in brackets): a `route.host` that is no wildcard.
 */
export function isAuthority(s: string): boolean {
  return !s.startsWith("*") && isRouteHost(s);
}

const AUTHORITY_MESSAGE =
  "must be a host name or address with an optional :port (IPv6 in brackets), such as site.internal or [::1]:8080";

/** Fields a `headers` rule may not touch: the proxy owns framing and the connection. */
function isProxyOwnedField(name: string): boolean {
  return HOP_BY_HOP.has(name) || name === "content-length";
}

/**
 * Why the field `name` (as written) may not be named by a `headers` rule of
 * `side` in `part` (`set`, `add`, `remove`), or null. The name and value
 * rules are `http/fields.ts`'s, the one source of them.
 */
function ruleNameError(name: string, side: "request" | "response", part: string): string | null {
  if (name.startsWith(":")) {
    return "is a pseudo-header: it cannot be rewritten (headers.request.set.host sets :authority)";
  }
  const lower = name.toLowerCase();
  const invalid = fieldNameError(lower);
  if (invalid !== null) return `is no valid field name: ${invalid}`;
  if (isProxyOwnedField(lower)) {
    return "is connection-specific or frames the message (the proxy sets it): it cannot be rewritten";
  }
  if (lower === "host" && (side === "response" || part !== "set")) {
    return side === "response"
      ? "is a request field"
      : "can only be set (set.host): a request has exactly one host";
  }
  return null;
}

/** Checks one `set` or `add` map of a `headers` rule; issues at `[part, name]`. */
function checkRuleMap(
  map: unknown,
  side: "request" | "response",
  part: "set" | "add",
  ctx: z.RefinementCtx,
): void {
  if (!isRecord(map)) return;
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(map)) {
    const path = [part, name];
    const why = ruleNameError(name, side, part);
    if (why !== null) {
      ctx.addIssue({ code: "custom", path, message: why });
      continue;
    }
    const lower = name.toLowerCase();
    const twin = seen.get(lower);
    if (twin !== undefined) {
      ctx.addIssue({
        code: "custom",
        path,
        message: `names the same field as ${twin} (names are case-insensitive)`,
      });
    }
    seen.set(lower, name);
    if (typeof value !== "string") continue;
    const bad = lower === "host"
      ? (isAuthority(value) ? null : AUTHORITY_MESSAGE)
      : fieldValueError(lower, value);
    if (bad !== null) ctx.addIssue({ code: "custom", path, message: bad });
  }
}

const RULE_VALUE = z.string({ error: "must be a string (quote numbers and booleans)" });

/**
 * One side (`request` or `response`) of a pool's `headers`: `remove` (a
 * list of names), then `set` (replaces), then `add` (appends). Names are
 * lowercased; pseudo-headers, connection-specific fields and
 * `content-length` are refused.
 */
function headerRulesSchema(side: "request" | "response") {
  return z.strictObject({
    set: z.record(z.string(), RULE_VALUE).default({}),
    add: z.record(z.string(), RULE_VALUE).default({}),
    remove: z.array(z.string({ error: "must be a field name" })).default([]),
  }).superRefine((rules, ctx) => {
    checkRuleMap(rules.set, side, "set", ctx);
    checkRuleMap(rules.add, side, "add", ctx);
    const remove: unknown = rules.remove;
    if (!Array.isArray(remove)) return;
    remove.forEach((name: unknown, index: number) => {
      if (typeof name !== "string") return;
      const why = ruleNameError(name, side, "remove");
      if (why !== null) ctx.addIssue({ code: "custom", path: ["remove", index], message: why });
    });
  }, ALWAYS).transform((rules): HeaderRulesConfig => ({
    set: lowercaseKeys(rules.set),
    add: lowercaseKeys(rules.add),
    remove: rules.remove.map((n) => n.toLowerCase()),
  }));
}

function lowercaseKeys<V>(map: Record<string, V>): Record<string, V> {
  const out: Record<string, V> = {};
  for (const [name, value] of Object.entries(map)) out[name.toLowerCase()] = value;
  return out;
}

/** `headers` of a pool: rewriting of what the backend is sent and what the client gets. */
export const HeadersConfigSchema = z.strictObject({
  request: headerRulesSchema("request").optional(),
  response: headerRulesSchema("response").optional(),
}).transform((h): HeadersConfig => h);

/** `health_check` of one backend, all fields defaulted. Times are milliseconds. */
export const HealthCheckConfigSchema = z.strictObject({
  path: z.string().refine((p) => p.startsWith("/"), { message: 'must start with "/"' })
    .default("/health"),
  interval: positiveInt("milliseconds").default(5000),
  timeout_ms: positiveInt("milliseconds").default(1000),
  failure_threshold: positiveInt().default(3),
  success_threshold: positiveInt().default(2),
  cooldown_ms: nonNegativeInt("milliseconds").default(5000),
  method: z.string().refine((m) => isToken(m) && m === m.toUpperCase(), {
    message: "must be an uppercase HTTP method token such as GET or HEAD",
  }).default("GET"),
  /** `Host` (`:authority`) of the probes; default the pool's `headers.request.set.host`, else the address. */
  host: z.string().refine(isAuthority, { message: AUTHORITY_MESSAGE }).optional(),
});

/**
 * `tls` of a backend: HTTP/2 over TLS (ALPN h2) instead of h2c. `true` trusts
 * the system's roots; `ca` names a PEM file of CA certificates to trust
 * instead (relative to the config file); `server_name` is the name sent
 * (SNI) and checked in the certificate, by default the address's host.
 */
export const BackendTlsConfigSchema = z.preprocess(
  (v) => (v === true ? {} : v === false ? undefined : v),
  z.strictObject({
    ca: nonEmpty().optional(),
    server_name: nonEmpty().optional(),
    /** Client certificate chain (PEM file) for mutual TLS; needs `key`. */
    cert: nonEmpty().optional(),
    /** Its private key (PEM file); needs `cert`. */
    key: nonEmpty().optional(),
  }, { error: "must be true, false or a mapping with ca, server_name, cert and key" }).optional(),
);

/** `protocol` of a backend: how the proxy speaks to it. */
export const BACKEND_PROTOCOLS = ["h2", "http1", "auto"] as const;

/**
 * One backend of a pool. `protocol`: `h2` (HTTP/2: h2c, or ALPN h2 with
 * `tls`), `http1` (HTTP/1.1, ALPN http/1.1 with `tls`) or `auto` (with `tls`
 * only: whichever of the two the backend picks by ALPN).
 */
export const BackendConfigSchema = z.strictObject({
  id: nonEmpty(),
  address: z.string().refine((a) => parseHostPort(a) !== null, {
    message: "must be host:port (IPv6 as [::1]:8080, port 1-65535)",
  }),
  weight: nonNegativeInt().default(100),
  health_check: HealthCheckConfigSchema.optional(),
  /** Requests in flight to the backend at most (circuit breaking); unlimited when absent. */
  max_inflight: int(1, 1_000_000, "must be an integer from 1 to 1000000 (requests)").optional(),
  tls: BackendTlsConfigSchema,
  protocol: z.enum(BACKEND_PROTOCOLS, {
    error: `must be one of ${BACKEND_PROTOCOLS.join(", ")}`,
  }).default("h2"),
}).superRefine((b, ctx) => {
  if (b.protocol === "auto" && b.tls === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["protocol"],
      message: "auto needs tls (the protocol is chosen by ALPN)",
    });
  }
  const tls = b.tls;
  if (tls !== undefined && (tls.cert === undefined) !== (tls.key === undefined)) {
    const missing = tls.cert === undefined ? "cert" : "key";
    ctx.addIssue({
      code: "custom",
      path: ["tls", missing === "cert" ? "key" : "cert"],
      message: `needs tls.${missing} too (a client certificate and its key go together)`,
    });
  }
});

/** The JWS algorithms `auth.jwt.algorithms` may name. */
export const JWT_ALGORITHMS = ["RS256", "ES256", "EdDSA", "HS256"] as const;

/** The asymmetric algorithms accepted when `auth.jwt.algorithms` is not given. */
const DEFAULT_JWT_ALGORITHMS = ["RS256", "ES256", "EdDSA"] as const;

/** A JWT claim name as `required_claims` and `forward_claims` name it. */
const CLAIM_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;
const CLAIM_NAME_MESSAGE = "must be a claim name: 1 to 64 letters, digits, _ . : or -";

/**
 * Why `name` cannot be a field `auth` reads a credential from or writes a
 * claim into, or null: it must be a valid field name the proxy does not own
 * (no pseudo-header, connection-specific field, `content-length`, `host`).
 */
function authFieldError(name: string, what: string): string | null {
  if (name.startsWith(":")) return `is a pseudo-header: it cannot be ${what}`;
  const lower = name.toLowerCase();
  const invalid = fieldNameError(lower);
  if (invalid !== null) return `is no valid field name: ${invalid}`;
  if (isProxyOwnedField(lower) || lower === "host") {
    return `is connection-specific, frames the message or routes it: it cannot be ${what}`;
  }
  return null;
}

/** `auth.api_keys`: the field carrying the key, and the file of keys. */
export const ApiKeysAuthConfigSchema = z.strictObject({
  header: z.string().superRefine((name, ctx) => {
    const why = authFieldError(name, "an API key field") ??
      (name.toLowerCase() === "authorization"
        ? "is the JWT's field: give API keys a field of their own (x-api-key)"
        : null);
    if (why !== null) ctx.addIssue({ code: "custom", message: why });
  }).transform((name) => name.toLowerCase()).default("x-api-key"),
  keys_file: nonEmpty(),
}).transform((c): ApiKeysAuthConfig => c);

/** `required_claims`: a list of claim names, or a map of claim name to the value it must hold. */
const RequiredClaimsSchema = z.union([
  z.array(z.string().regex(CLAIM_NAME, { message: CLAIM_NAME_MESSAGE })),
  z.record(
    z.string().regex(CLAIM_NAME, { message: CLAIM_NAME_MESSAGE }),
    z.string({ error: "must be the value the claim must hold (a string)" }),
  ),
], { error: "must be a list of claim names or a map of claim name to required value" })
  .transform((claims): Record<string, string | null> =>
    Array.isArray(claims) ? Object.fromEntries(claims.map((name) => [name, null])) : { ...claims }
  );

/** `forward_claims`: claim name → the request field it is forwarded in. */
const ForwardClaimsSchema = z.record(
  z.string().regex(CLAIM_NAME, { message: CLAIM_NAME_MESSAGE }),
  z.string({ error: "must be a field name" }),
).superRefine((map, ctx) => {
  const seen = new Map<string, string>();
  for (const [claim, field] of Object.entries(map)) {
    if (typeof field !== "string") continue;
    const lower = field.toLowerCase();
    const why = authFieldError(field, "a forwarded claim") ??
      (lower === "authorization" ? "is the credential's field" : null);
    if (why !== null) ctx.addIssue({ code: "custom", path: [claim], message: why });
    const twin = seen.get(lower);
    if (twin !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [claim],
        message: `names the same field as claim ${twin} (names are case-insensitive)`,
      });
    }
    seen.set(lower, claim);
  }
}).transform((map) =>
  Object.fromEntries(Object.entries(map).map(([claim, field]) => [claim, field.toLowerCase()]))
);

/** `auth.jwt`: bearer JWTs verified against a JWKS file, with `iss`, `aud` and claim rules. */
export const JwtAuthConfigSchema = z.strictObject({
  jwks_file: nonEmpty(),
  algorithms: z.array(z.enum(JWT_ALGORITHMS, {
    error: `must be one of ${JWT_ALGORITHMS.join(", ")}`,
  })).min(1, { message: "needs at least one algorithm" })
    .transform((algs) => [...new Set(algs)])
    .default([...DEFAULT_JWT_ALGORITHMS]),
  issuers: z.array(nonEmpty()).default([]),
  audiences: z.array(nonEmpty()).default([]),
  clock_skew_s: int(0, 3600, "must be an integer from 0 to 3600 (seconds)").default(30),
  required_claims: RequiredClaimsSchema.prefault([]),
  forward_claims: ForwardClaimsSchema.default({}),
}).transform((c): JwtAuthConfig => c);

/**
 * `auth` of a pool: `api_keys` and/or `jwt` (either credential admits a
 * request); `forward_credentials: false` keeps the credential field from
 * the backend.
 */
export const AuthConfigSchema = z.strictObject({
  api_keys: ApiKeysAuthConfigSchema.optional(),
  jwt: JwtAuthConfigSchema.optional(),
  forward_credentials: z.boolean().default(true),
}).superRefine((auth, ctx) => {
  if (auth.api_keys === undefined && auth.jwt === undefined) {
    ctx.addIssue({ code: "custom", message: "needs api_keys, jwt or both" });
  }
}, ALWAYS).transform((c): AuthConfig => c);

/** One `retries.retry_on` entry: a failure's name, or a backend status 400-599 as a number. */
const RetryOnSchema = z.union([
  z.enum(RETRY_ON_FAILURES),
  int(400, 599, "must be a status from 400 to 599"),
], {
  error: `must be ${RETRY_ON_FAILURES.join(", ")} or a backend status from 400 to 599 (a number)`,
});

/**
 * `retries` of a pool: `attempts` more sends at most, for the reasons
 * `retry_on` names, each attempt within `per_try_timeout_ms`, exponential
 * backoff with full jitter between them, and an Envoy-style budget.
 */
export const RetriesConfigSchema = z.strictObject({
  attempts: int(0, 10, "must be an integer from 0 to 10 (retries after the first attempt)")
    .default(1),
  per_try_timeout_ms: positiveInt("milliseconds").optional(),
  retry_on: z.array(RetryOnSchema).min(1, {
    message: "must name at least one reason (leave retries out for the default rule)",
  }).superRefine((reasons, ctx) => {
    reasons.forEach((r, index) => {
      if (reasons.indexOf(r) !== index) {
        ctx.addIssue({ code: "custom", path: [index], message: `repeats ${r}` });
      }
    });
  }).default([...RETRY_ON_FAILURES]),
  budget_percent: z.number().refine((n) => Number.isFinite(n) && n >= 0 && n <= 100, {
    message: "must be a number from 0 to 100 (percent)",
  }).default(DEFAULT_BUDGET_PERCENT),
  min_retries_per_second: int(0, 10_000, "must be an integer from 0 to 10000")
    .default(DEFAULT_MIN_RETRIES_PER_SECOND),
  backoff_base_ms: int(0, 60_000, "must be an integer from 0 to 60000 (milliseconds)")
    .default(25),
  backoff_max_ms: int(0, 600_000, "must be an integer from 0 to 600000 (milliseconds)")
    .default(250),
}).superRefine((r, ctx) => {
  const base = r.backoff_base_ms ?? 25;
  if (typeof r.backoff_max_ms === "number" && typeof base === "number" && r.backoff_max_ms < base) {
    ctx.addIssue({
      code: "custom",
      path: ["backoff_max_ms"],
      message: `must be at least backoff_base_ms (${base})`,
    });
  }
}, ALWAYS).transform((r): RetriesConfig => r);

/**
 * A pool's traffic limits that span keys: `retries.per_try_timeout_ms`
 * within `request_timeout_ms`, and `max_pending` only where a backend sets
 * `max_inflight` (else nothing ever waits). The value may be partly
 * invalid: shapes are checked before use.
 */
function checkPoolTraffic(pool: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const retries = pool.retries;
  const timeout = typeof pool.request_timeout_ms === "number" ? pool.request_timeout_ms : 30000;
  if (isRecord(retries) && typeof retries.per_try_timeout_ms === "number") {
    if (retries.per_try_timeout_ms > timeout) {
      ctx.addIssue({
        code: "custom",
        path: ["retries", "per_try_timeout_ms"],
        message: `must not exceed request_timeout_ms (${timeout}), which bounds the whole request`,
      });
    }
  }
  const backends = Array.isArray(pool.backends) ? pool.backends : [];
  const limited = backends.some((b) => isRecord(b) && b.max_inflight !== undefined);
  if (typeof pool.max_pending === "number" && pool.max_pending > 0 && !limited) {
    ctx.addIssue({
      code: "custom",
      path: ["max_pending"],
      message: "has no effect: no backend of the pool sets max_inflight, so nothing ever waits",
    });
  }
}

/**
 * `websocket` of a pool: whether WebSocket handshakes are forwarded, and how
 * long a WebSocket may stay silent (`idle_timeout_ms`) or open at all
 * (`max_duration_ms`, no limit when absent).
 */
export const WebSocketConfigSchema = z.strictObject({
  enabled: z.boolean().default(true),
  idle_timeout_ms: positiveInt("milliseconds").default(300_000),
  max_duration_ms: positiveInt("milliseconds").optional(),
}).transform((c): WebSocketConfig => c);

/**
 * One pool of `upstream`. `load_balancing` is left `undefined` when not given:
 * use the global `load_balancing` then.
 */
export const UpstreamConfigSchema = z.strictObject({
  route: RouteConfigSchema,
  load_balancing: LoadBalancingConfigSchema.optional(),
  backends: z.array(BackendConfigSchema).min(1, { message: "needs at least one backend" }),
  /** Timeout of one request to a backend of this pool, in milliseconds. */
  request_timeout_ms: positiveInt("milliseconds").default(30000),
  /**
   * Deadline of a new connection to a backend of this pool (TCP connect,
   * TLS handshake and the backend's first SETTINGS), in milliseconds.
   */
  connect_timeout_ms: positiveInt("milliseconds").default(10000),
  /** Field rewriting: `request` (what the backend is sent) and `response` (what the client gets). */
  headers: HeadersConfigSchema.optional(),
  /** When and how often requests are sent again (see {@link RetriesConfigSchema}). */
  retries: RetriesConfigSchema.optional(),
  /** Requests waiting for a slot when every candidate is at its `max_inflight`. */
  max_pending: int(0, 100_000, "must be an integer from 0 to 100000 (requests)").default(0),
  /** The `rate_limits` entry applied to the pool (checked to exist by {@link ConfigSchema}). */
  rate_limit: nonEmpty().optional(),
  /**
   * How often a backend address that names a host is looked up again, in
   * milliseconds (sooner when the answer's TTL is shorter); see {@link DnsConfigSchema}.
   */
  dns_refresh_ms: int(100, 86_400_000, "must be an integer from 100 to 86400000 (milliseconds)")
    .default(30_000),
  /** Edge authentication: API keys and/or JWT, checked before any backend is asked. */
  auth: AuthConfigSchema.optional(),
  /** WebSockets through the pool: on by default, with their idle and total limits. */
  websocket: WebSocketConfigSchema.optional(),
}).superRefine(checkPoolTraffic, ALWAYS);

/** A rate limit's name: a token usable as a metrics label and a `RateLimit-Policy` name. */
const RATE_LIMIT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Why `key` is not a rate limit's key, or `null`. */
function rateLimitKeyError(key: string): string | null {
  if (key === "client" || key === "bearer" || key === "route") return null;
  if (!key.startsWith("header:")) {
    return "must be client, bearer, route or header:<name>";
  }
  const name = key.slice("header:".length).toLowerCase();
  if (name === "") return "header:<name> needs a field name";
  return fieldNameError(name);
}

/**
 * One entry of `rate_limits`: a named token bucket (GCRA) per key of
 * `requests_per_second` sustained and `burst` at once.
 */
export const RateLimitConfigSchema = z.strictObject({
  name: z.string().regex(RATE_LIMIT_NAME, {
    message: "must be 1 to 64 letters, digits, _ or -",
  }),
  requests_per_second: z.number().refine((n) => Number.isFinite(n) && n > 0 && n <= 1e9, {
    message: "must be a number > 0 (requests per second)",
  }),
  burst: int(1, 1_000_000, "must be an integer from 1 to 1000000 (requests)"),
  key: z.string().superRefine((key, ctx) => {
    const why = rateLimitKeyError(key);
    if (why !== null) ctx.addIssue({ code: "custom", message: why });
  }).transform((key) => key.startsWith("header:") ? key.toLowerCase() : key),
  response_headers: z.boolean().default(false),
  max_keys: int(1, 10_000_000, "must be an integer from 1 to 10000000 (keys)").default(100_000),
});

/**
 * `log`: level and optional file output. The level names are the logging
 * setup's ({@link LEVEL_NAMES}, any case), and so is the default file path.
 */
export const LogConfigSchema = z.strictObject({
  level: z.string().refine((l) => lookupLevel(l) !== null, {
    message: `must be one of ${Object.keys(LEVEL_NAMES).join(", ")} (any case)`,
  }).transform((l) => l.toLowerCase()).default("info"),
  file: z.strictObject({
    enabled: z.boolean().default(false),
    path: nonEmpty().default(DEFAULT_LOG_FILE),
  }).prefault({}),
  /** The access log; `true`/`false` is short for `{enabled: …}`. */
  access: z.preprocess(
    (v) => (typeof v === "boolean" ? { enabled: v } : v),
    z.strictObject({
      enabled: z.boolean().default(true),
      format: z.enum(["text", "json"], { error: 'must be "text" or "json"' }).default("text"),
      file: nonEmpty().optional(),
    }, { error: "must be true, false or a mapping with enabled, format and file" }),
  ).prefault({}).transform((a): AccessLogConfig => a),
});

/** `limits`: request and shutdown limits (optional addition to version 1). */
export const LimitsConfigSchema = z.strictObject({
  /** Largest accepted header section (RFC 9114 SETTINGS_MAX_FIELD_SECTION_SIZE), in bytes. */
  max_header_list_size: positiveInt("bytes").default(65536),
  /** Largest accepted request body, in bytes. */
  max_request_body_bytes: nonNegativeInt("bytes").default(2147483648),
  /** How long a shutdown waits for open requests, in milliseconds. */
  drain_timeout_ms: nonNegativeInt("milliseconds").default(10000),
  /**
   * Longest wait for the next part of a request (its header section, or the
   * next piece of its body) before answering 408, in milliseconds; also the
   * longest a response may stall, on the backend's side or on a client that
   * accepts none of it, before it is cut and its backend stream reset.
   */
  request_idle_timeout_ms: positiveInt("milliseconds").default(30000),
  /**
   * Requests one client connection may have in flight to one pool (each
   * holds a backend stream); past it a request waits for one of the
   * connection's own to finish, up to the pool's `request_timeout_ms`, and
   * is answered 503 (never sent) when none does.
   */
  max_backend_streams_per_connection: positiveInt().default(100),
  /**
   * QPACK dynamic table offered to each HTTP/3 client (SETTINGS_QPACK_MAX_TABLE_CAPACITY,
   * bytes, up to 65536). 0, the default (as Caddy's): clients send every
   * header field as a literal or a static-table reference, and the proxy
   * opens no QPACK decoder stream. Above 0 a client may compress repeated
   * request fields (cookies, user agents) into table references, at the cost
   * of an acknowledgement written per such request: 15-25% more CPU per
   * request, measured.
   */
  qpack_max_table_capacity: int(0, 65536, "must be an integer from 0 to 65536 (bytes)").default(0),
  /**
   * A QUIC handshake not complete within this is closed, in milliseconds
   * (must stay below `listen.idle_timeout_ms`).
   */
  handshake_timeout_ms: positiveInt("milliseconds").default(10000),
  /**
   * Unfinished QUIC handshakes held at once; a newcomer past it closes the
   * oldest unfinished handshake (a spoofed Initial never finishes).
   */
  max_handshakes: positiveInt().default(256),
  /** Open HTTP/3 connections; past it newcomers are refused. */
  max_connections: positiveInt().default(4096),
  /**
   * Handshakes and connections from one client address group (see
   * `address_prefix_v4`/`_v6`); past it newcomers are closed.
   */
  max_connections_per_address: positiveInt().default(64),
  /** Unfinished handshakes from one address group; past it the group's oldest is closed. */
  max_handshakes_per_address: positiveInt().default(64),
  /** Unfinished handshakes from one network (see `network_prefix_v4`/`_v6`); past it its oldest is closed. */
  max_handshakes_per_network: positiveInt().default(128),
  /**
   * New QUIC handshakes accepted per second; past it Initials are ignored
   * unseen (accepting one costs a TLS server flight, ignoring almost nothing).
   */
  max_handshake_rate: positiveInt("per second").default(2000),
  /** IPv4 prefix length of one client address group (32: each address). */
  address_prefix_v4: int(1, 32, "must be a prefix length from 1 to 32").default(32),
  /** IPv6 prefix length of one client address group (64: one customer LAN). */
  address_prefix_v6: int(1, 128, "must be a prefix length from 1 to 128").default(64),
  /** IPv4 prefix length of one network for `max_handshakes_per_network`. */
  network_prefix_v4: int(1, 32, "must be a prefix length from 1 to 32").default(24),
  /** IPv6 prefix length of one network for `max_handshakes_per_network`. */
  network_prefix_v6: int(1, 128, "must be a prefix length from 1 to 128").default(56),
  /**
   * Receive buffer asked for the QUIC socket at startup, in bytes (quic-go's
   * 7 MiB by default): `SO_RCVBUF`, then `SO_RCVBUFFORCE` with CAP_NET_ADMIN;
   * never lowered; `0` leaves the kernel's `net.core.rmem_default`.
   */
  udp_receive_buffer: int(0, 1073741824, "must be a whole number of bytes from 0 to 1073741824")
    .default(7340032),
  /**
   * Once open connections reach 90% of `max_connections`, a connection with
   * no request in flight for this long is sent away with GOAWAY, in
   * milliseconds; `0` never does.
   */
  idle_reclaim_ms: nonNegativeInt("milliseconds").default(5000),
  /**
   * Open connections of the TCP fallback; past it newcomers are closed at
   * once. `auto`: as many as the open-files limit leaves room for (each
   * takes three descriptors), at most 4096.
   */
  tcp_max_connections: z.union([
    z.literal("auto"),
    int(1, 1_000_000, "must be auto or a whole number from 1 to 1000000"),
  ]).default("auto"),
  /**
   * A TCP fallback connection whose TLS handshake and first request head are
   * not complete within this is closed, in milliseconds.
   */
  tcp_header_timeout_ms: positiveInt("milliseconds").default(10000),
  /** A TCP fallback connection with no request in flight for this long is closed, in milliseconds. */
  tcp_idle_timeout_ms: positiveInt("milliseconds").default(60000),
});

/**
 * True when `address` can only be reached from this machine: an IPv4 address
 * in 127.0.0.0/8, `::1`, an IPv4-mapped loopback address (`::ffff:127.0.0.1`)
 * or the name `localhost`. Any other name may resolve to anything, so it
 * counts as reachable from outside.
 *
 * @example
 * ```ts
 * isLoopbackAddress("127.0.0.1"); // true
 * isLoopbackAddress("0.0.0.0");   // false
 * ```
 */
export function isLoopbackAddress(address: string): boolean {
  const a = address.toLowerCase();
  if (a === "localhost" || a === "localhost.") return true;
  if (isIPv4(a)) return a.startsWith("127.");
  if (!isIPv6(a)) return false;
  const url = new URL(`http://[${a}]/`).hostname; // canonical form, e.g. [::ffff:7f00:1]
  if (url === "[::1]") return true;
  const mapped = /^\[::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}\]$/.exec(url);
  return mapped !== null && (parseInt(mapped[1], 16) >> 8) === 127;
}

/** The id of an `admin.tokens` entry: its file's name (never the token). */
export function tokenFileId(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** The roles of `admin.tokens[].role`, least first. */
export const ADMIN_ROLES = ["viewer", "operator", "admin"] as const;

/** One entry of `admin.tokens`: a file holding a token, and its role. */
export const AdminTokenConfigSchema = z.strictObject({
  token_file: nonEmpty(),
  role: z.enum(ADMIN_ROLES, { error: `must be one of ${ADMIN_ROLES.join(", ")}` }),
}).transform((t): AdminTokenConfig => t);

/** `admin.ready.require`: which pools must have an available backend for `GET /ready` to be 200. */
export const READY_REQUIREMENTS = ["all_pools", "any_pool"] as const;

/**
 * `admin.ready`: `require: all_pools` (default) makes `GET /ready` 200 only
 * while every pool has a healthy, enabled backend; `any_pool`, while one has.
 */
export const AdminReadyConfigSchema = z.strictObject({
  require: z.enum(READY_REQUIREMENTS, {
    error: `must be one of ${READY_REQUIREMENTS.join(", ")}`,
  }).default("all_pools"),
});

/** True when `s` is a name server: an IP address, with an optional port (IPv6 then in brackets). */
function isNameServer(s: string): boolean {
  if (isIPv4(s) || isIPv6(s)) return true;
  const hp = parseHostPort(s);
  return hp !== null && (isIPv4(hp.host) || isIPv6(hp.host));
}

/**
 * `dns`: how backend addresses that name a host (`api.internal:8080`) are
 * looked up: the name servers asked (A and AAAA; empty: the system's, from
 * `/etc/resolv.conf`) and how long one lookup may take. Each pool's
 * `dns_refresh_ms` says how often.
 */
export const DnsConfigSchema = z.strictObject({
  servers: z.array(
    z.string().refine(isNameServer, {
      message:
        "must be a name server's IP address with an optional port: 10.0.0.2, 10.0.0.2:5353, fd00::53 or [fd00::53]:5353",
    }),
  ).default([]),
  timeout_ms: int(100, 60_000, "must be an integer from 100 to 60000 (milliseconds)").default(5000),
});

/** Message given when a non-loopback admin listener has no token. */
export const ADMIN_TOKEN_REQUIRED =
  "is required when admin.address is not a loopback address: without it anyone who can " +
  "reach the port could drain the proxy or disable its backends; set a token, or bind " +
  "admin.address to 127.0.0.1";

/**
 * `admin`: the admin listener (`/health`, `/metrics`, `/admin/*`) over HTTP/1.1
 * and h2c; loopback unless told otherwise. With `token`, every `/admin/` call
 * needs `Authorization: Bearer <token>`. A listener on an address other
 * hosts can reach must have a token (it fails closed, as Envoy's does).
 */
export const AdminConfigSchema = z.strictObject({
  address: z.string().refine(isBindAddress, {
    message: "must be an IPv4 address, an IPv6 literal without brackets or a hostname",
  }).default("127.0.0.1"),
  port: int(0, 65535, LISTEN_PORT_MESSAGE),
  token: nonEmpty().optional(),
  /** Tokens with roles (`viewer`, `operator`, `admin`), each in its own file. */
  tokens: z.array(AdminTokenConfigSchema).default([]),
  /** CIDRs of the peers served; absent: any peer. */
  allow: z.array(cidrString()).optional(),
  /** JSON lines of every mutating call and every refused one. */
  audit_log: nonEmpty().optional(),
  /** Open admin connections; past it newcomers are closed at once. */
  max_connections: positiveInt().default(64),
  /** An admin connection with no complete request head this long after it opened is closed, in ms. */
  header_timeout_ms: positiveInt("milliseconds").default(10000),
  /** An admin connection with no request in flight for this long is closed, in ms. */
  idle_timeout_ms: positiveInt("milliseconds").default(60000),
  /** `GET /ready`: what the proxy needs to call itself ready. */
  ready: AdminReadyConfigSchema.prefault({}),
}).superRefine((admin, ctx) => {
  checkTokenFileNames(admin.tokens, ctx);
  const address = admin.address ?? "127.0.0.1";
  if (typeof address !== "string" || !isBindAddress(address)) return;
  const tokens: unknown = admin.tokens;
  const hasTokens = Array.isArray(tokens) && tokens.length > 0;
  if (admin.token === undefined && !hasTokens && !isLoopbackAddress(address)) {
    ctx.addIssue({ code: "custom", path: ["token"], message: ADMIN_TOKEN_REQUIRED });
  }
}, ALWAYS);

/**
 * The file names of `admin.tokens` are the tokens' ids in the audit log:
 * two files of the same name would be one id.
 */
function checkTokenFileNames(tokens: unknown, ctx: z.RefinementCtx): void {
  if (!Array.isArray(tokens)) return;
  const seen = new Map<string, number>();
  tokens.forEach((entry: unknown, index) => {
    if (!isRecord(entry) || typeof entry.token_file !== "string") return;
    const name = tokenFileId(entry.token_file);
    const first = seen.get(name);
    if (first !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["tokens", index, "token_file"],
        message: `has the same file name as admin.tokens[${first}] ("${name}"): the file ` +
          "name is the token's id in the audit log, so each must be distinct",
      });
    } else seen.set(name, index);
  });
}

/**
 * `passive_health`: outlier detection on live traffic. After
 * `consecutive_failures` connect failures or 5xx answers in a row, a backend
 * is ejected for `eject_ms` (default: 5000, the default cooldown).
 */
export const PassiveHealthConfigSchema = z.strictObject({
  enabled: z.boolean().default(true),
  consecutive_failures: positiveInt().default(5),
  eject_ms: nonNegativeInt("milliseconds").default(5000),
});

/** Where a backend id was first seen, for the duplicate check. */
interface SeenBackend {
  pool: string;
  index: number;
}

/**
 * The whole configuration file. Cross-pool rules (backend ids unique across
 * all pools, no two pools with the same route) run even when other parts of
 * the file are invalid, so that every problem is reported at once.
 */
export const ConfigSchema = z.strictObject({
  version: z.literal(1, { error: "must be 1 (the only supported configuration version)" }),
  listen: ListenConfigSchema,
  upstream: z.record(z.string(), UpstreamConfigSchema).refine((u) => Object.keys(u).length > 0, {
    message: "needs at least one pool",
  }),
  load_balancing: LoadBalancingConfigSchema.prefault({ type: "round-robin" }),
  log: LogConfigSchema.prefault({}),
  limits: LimitsConfigSchema.prefault({}),
  admin: AdminConfigSchema.optional(),
  passive_health: PassiveHealthConfigSchema.prefault({}),
  /**
   * Clients (IPv4/IPv6 addresses or CIDRs) whose forwarding fields are
   * believed: from them `x-forwarded-for` and `forwarded` are appended to;
   * from anyone else they are replaced. Empty: nobody is trusted.
   */
  trusted_proxies: z.array(cidrString()).default([]),
  /** Named rate limits; a pool applies one with `rate_limit: <name>`. */
  rate_limits: z.array(RateLimitConfigSchema).default([]),
  /** Lookups of backend addresses that name a host. */
  dns: DnsConfigSchema.prefault({}),
}).superRefine((config, ctx) => {
  checkRateLimitNames(config, ctx);
  // The value may be partly invalid here: check shapes before use.
  const handshake = (config.limits as { handshake_timeout_ms?: unknown } | undefined)
    ?.handshake_timeout_ms;
  const idle = (config.listen as { idle_timeout_ms?: unknown } | undefined)?.idle_timeout_ms;
  if (typeof handshake === "number" && typeof idle === "number" && handshake >= idle) {
    ctx.addIssue({
      code: "custom",
      path: ["limits", "handshake_timeout_ms"],
      message: `must be below listen.idle_timeout_ms (${idle})`,
    });
  }
  const upstream: unknown = config.upstream;
  if (!isRecord(upstream)) return;
  const ids = new Map<string, SeenBackend>();
  const routes = new Map<string, string>();
  for (const [pool, value] of Object.entries(upstream)) {
    if (!isRecord(value)) continue;
    const route = value.route;
    const signature = isRecord(route) ? routeSignature(route) : null;
    if (signature !== null) {
      const other = routes.get(signature);
      if (other !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["upstream", pool, "route"],
          message: `has the same host and path_prefix as pool "${other}", ` +
            "and the same methods and headers (it could never be chosen)",
        });
      } else routes.set(signature, pool);
    }
    if (!Array.isArray(value.backends)) continue;
    value.backends.forEach((backend: unknown, index: number) => {
      if (!isRecord(backend) || typeof backend.id !== "string" || backend.id === "") return;
      const first = ids.get(backend.id);
      if (first === undefined) {
        ids.set(backend.id, { pool, index });
        return;
      }
      ctx.addIssue({
        code: "custom",
        path: ["upstream", pool, "backends", index, "id"],
        message: `duplicate backend id "${backend.id}" (already used by upstream.${
          formatPoolName(first.pool)
        }.backends[${first.index}]); ids must be unique across all pools`,
      });
    });
  }
}, ALWAYS);

/**
 * What makes two routes the same (every condition, order and case aside),
 * or `null` for a route with neither host nor prefix (refused on its own).
 * The value may be partly invalid: shapes are checked before use.
 */
function routeSignature(route: Record<string, unknown>): string | null {
  const host = typeof route.host === "string" ? route.host.toLowerCase() : "";
  const prefix = typeof route.path_prefix === "string" ? route.path_prefix : "";
  if (!host && !prefix) return null;
  const methods = Array.isArray(route.methods)
    ? [...new Set(route.methods.map(String))].sort()
    : [];
  const headers = isRecord(route.headers)
    ? Object.entries(route.headers).map(([n, c]) => [n.toLowerCase(), c] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    : [];
  return JSON.stringify([host, prefix, methods, headers]);
}

/**
 * `rate_limits` names are unique, and every pool's `rate_limit` names one
 * of them. The value may be partly invalid: shapes are checked before use.
 */
function checkRateLimitNames(config: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const names = new Set<string>();
  const limits: unknown = config.rate_limits;
  if (Array.isArray(limits)) {
    limits.forEach((limit: unknown, index) => {
      if (!isRecord(limit) || typeof limit.name !== "string") return;
      if (names.has(limit.name)) {
        ctx.addIssue({
          code: "custom",
          path: ["rate_limits", index, "name"],
          message: `duplicate rate limit name "${limit.name}"`,
        });
      }
      names.add(limit.name);
    });
  }
  const upstream: unknown = config.upstream;
  if (!isRecord(upstream)) return;
  for (const [pool, value] of Object.entries(upstream)) {
    if (!isRecord(value) || typeof value.rate_limit !== "string" || value.rate_limit === "") {
      continue;
    }
    if (names.has(value.rate_limit)) continue;
    ctx.addIssue({
      code: "custom",
      path: ["upstream", pool, "rate_limit"],
      message: `names no entry of rate_limits ("${value.rate_limit}"; known: ${
        [...names].join(", ") || "none"
      })`,
    });
  }
}

function formatPoolName(name: string): string {
  return /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
}

// The schema's output is exactly the documented types of `types.ts`: a field
// added to, dropped from or retyped in one side only fails `deno check` here.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
const SAME_TYPES: [
  Same<z.output<typeof ConfigSchema>, Config>,
  Same<z.output<typeof ListenConfigSchema>, ListenConfig>,
  Same<z.output<typeof TlsConfigSchema>, TlsConfig>,
  Same<z.output<typeof UpstreamConfigSchema>, UpstreamConfig>,
  Same<z.output<typeof RouteConfigSchema>, RouteConfig>,
  Same<z.output<typeof BackendConfigSchema>, BackendConfig>,
  Same<z.output<typeof HealthCheckConfigSchema>, HealthCheckConfig>,
  Same<z.output<typeof LogConfigSchema>, LogConfig>,
  Same<z.output<typeof LimitsConfigSchema>, LimitsConfig>,
  Same<z.output<typeof AdminConfigSchema>, AdminConfig>,
  Same<z.output<typeof PassiveHealthConfigSchema>, PassiveHealthConfig>,
  Same<z.output<typeof RateLimitConfigSchema>, RateLimitConfig>,
  Same<z.output<typeof DnsConfigSchema>, DnsConfig>,
  Same<z.output<typeof AdminReadyConfigSchema>, AdminReadyConfig>,
  Same<z.output<typeof AuthConfigSchema>, AuthConfig>,
  Same<z.output<typeof AdminTokenConfigSchema>, AdminTokenConfig>,
  Same<z.output<typeof WebSocketConfigSchema>, WebSocketConfig>,
] = [
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
  true,
];
void SAME_TYPES;
