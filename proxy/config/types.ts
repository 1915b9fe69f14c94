/**
 * The types of the proxy's validated configuration, spelled out so that the
 * public API documents every field. `schema.ts` produces exactly these types:
 * the compiler checks that the schema's output and each type here are the
 * same, so a field added to one and not the other fails `deno check`.
 *
 * Keys stay in snake_case, exactly as they are written in the YAML file.
 *
 * @module
 */

import type { LoadBalancingConfig } from "../balancer/types.ts";

export type { LoadBalancingConfig };

/** `listen.tls`: certificate and key paths (`ca` is always rejected, so never present). */
export interface TlsConfig {
  /** Path of the PEM certificate chain. */
  cert: string;
  /** Path of the PEM private key. */
  key: string;
  /** Never present: Deno's QUIC listener cannot verify client certificates (docs/architecture.md §4). */
  ca?: undefined;
}

/** `listen`: the HTTP/3 listener. */
export interface ListenConfig {
  /** Always `"http3"`. */
  protocol: "http3";
  /** UDP port; 0 picks a free port (printed in `Listening on`), for tests and tools. */
  port: number;
  /** Bind address: IPv4, IPv6 literal without brackets, or host name. */
  address: string;
  /** Certificate and key. */
  tls: TlsConfig;
  /** Concurrent bidirectional streams a client may open per connection. */
  max_streams: number;
  /** QUIC idle timeout in milliseconds. */
  idle_timeout_ms: number;
  /**
   * Also serve HTTP/2 and HTTP/1.1 over TCP+TLS on the same port number, with
   * `alt-svc: h3=":<port>"` on every response (browsers then switch to HTTP/3).
   */
  tcp_fallback: boolean;
}

/**
 * A `route.headers` condition: the exact value of a field, a prefix of it
 * (`{prefix}`), or the field's presence (`{present: true}`) or absence
 * (`{present: false}`).
 */
export type RouteHeaderCondition = string | { prefix: string } | { present: boolean };

/**
 * `route` of a pool: how requests are matched to it. At least one of `host`
 * and `path_prefix` is set; the precedence of routes is
 * `proxy/router/router.ts`'s `routePrecedence`.
 */
export interface RouteConfig {
  /** Host name, `*.example.com` wildcard or address, with an optional `:port`. */
  host?: string;
  /** Path prefix, starting with `/`; without a trailing `/` it matches on a segment boundary. */
  path_prefix?: string;
  /** Methods the route serves (uppercase, case-sensitive); any when absent. */
  methods?: string[];
  /** Field conditions, lowercase names; every one must hold. None when absent. */
  headers?: Record<string, RouteHeaderCondition>;
}

/** `health_check` of a backend, defaults applied. Times are milliseconds. */
export interface HealthCheckConfig {
  /** Probe path, starting with `/`. */
  path: string;
  /** Time between probes. */
  interval: number;
  /** Time a probe may take. */
  timeout_ms: number;
  /** Failed probes in a row that mark a backend unhealthy. */
  failure_threshold: number;
  /** Passed probes in a row that mark it healthy again. */
  success_threshold: number;
  /** Least time an unhealthy backend stays out. */
  cooldown_ms: number;
  /** Probe method, an uppercase HTTP token. */
  method: string;
  /** `Host` (`:authority`) of the probes; default the pool's `headers.request.set.host`, else the address. */
  host?: string;
}

/** `tls` of a backend (`true` in the file is `{}`): HTTP/2 over TLS with ALPN h2. */
export interface BackendTlsConfig {
  /** PEM file of CA certificates to trust instead of the system's roots (resolved path). */
  ca?: string;
  /** Name for SNI and the certificate check; default the address's host. */
  server_name?: string;
  /** PEM client certificate chain presented to the backend (mutual TLS; resolved path; with `key`). */
  cert?: string;
  /** PEM private key of `cert` (resolved path; with `cert`). */
  key?: string;
}

/** One backend of a pool. */
export interface BackendConfig {
  /** Identifier, unique across all pools. */
  id: string;
  /** `host:port` (IPv6 as `[::1]:8080`). */
  address: string;
  /** Relative weight; 0 drains the backend. */
  weight: number;
  /** Active health checking; none when absent. */
  health_check?: HealthCheckConfig;
  /** TLS to the backend; h2c (prior knowledge) when absent. */
  tls?: BackendTlsConfig;
  /** `h2` (default), `http1`, or `auto` (with `tls`: chosen by ALPN). */
  protocol: BackendProtocol;
  /**
   * Requests in flight to the backend at most (from sending to the response
   * head); past it the next candidate, the pool's queue (`max_pending`), or
   * 503 `overloaded`. Unlimited when absent.
   */
  max_inflight?: number;
}

/**
 * `retries` of a pool: when and how often a request is sent again, within
 * a retry budget. A pool without it keeps the default rule (one retry
 * after a connect failure or a reset, no wait, no budget).
 */
export interface RetriesConfig {
  /** Times a request may be sent again after its first attempt (default 1). */
  attempts: number;
  /** Bound of each attempt, in milliseconds; absent: the request's `request_timeout_ms` only. */
  per_try_timeout_ms?: number;
  /** What is retried: `connect`, `refused`, `reset`, `timeout` and backend statuses (numbers). */
  retry_on: Array<"connect" | "refused" | "reset" | "timeout" | number>;
  /** Retries in flight at most, in percent of the pool's requests on their first attempt (default 20). */
  budget_percent: number;
  /** Retries per second allowed whatever the percentage (default 3). */
  min_retries_per_second: number;
  /** Base of the exponential backoff between attempts, in milliseconds (default 25; 0: none). */
  backoff_base_ms: number;
  /** Longest backoff, in milliseconds (default 250). */
  backoff_max_ms: number;
}

/** How the proxy speaks to a backend: HTTP/2, HTTP/1.1, or whichever ALPN picks (`tls` only). */
export type BackendProtocol = "h2" | "http1" | "auto";

/**
 * One side of a pool's `headers`, names lowercased. Applied in this order:
 * `remove`, then `set` (replaces every field of the name), then `add`
 * (appends a field).
 */
export interface HeaderRulesConfig {
  /** Fields set, replacing any of the same name; `host` (request only) sets the upstream authority. */
  set: Record<string, string>;
  /** Fields appended, after those already there. */
  add: Record<string, string>;
  /** Names of fields removed. */
  remove: string[];
}

/** `headers` of a pool. */
export interface HeadersConfig {
  /** Rewriting of the request the backend is sent. */
  request?: HeaderRulesConfig;
  /** Rewriting of the backend's response, as the client gets it. */
  response?: HeaderRulesConfig;
}

/** One pool of `upstream`. */
export interface UpstreamConfig {
  /** Which requests the pool serves. */
  route: RouteConfig;
  /** The pool's own load balancing; the global `load_balancing` when absent. */
  load_balancing?: LoadBalancingConfig;
  /** The backends, at least one. */
  backends: BackendConfig[];
  /** Timeout of one request to a backend of this pool, in milliseconds. */
  request_timeout_ms: number;
  /**
   * Deadline of a new connection to a backend of this pool (TCP connect,
   * TLS handshake and the backend's first SETTINGS), in milliseconds.
   */
  connect_timeout_ms: number;
  /** Field rewriting of the pool's requests and responses; none when absent. */
  headers?: HeadersConfig;
  /** Name of the `rate_limits` entry applied to the pool's requests; unlimited when absent. */
  rate_limit?: string;
  /** When and how often requests are sent again; the default rule when absent. */
  retries?: RetriesConfig;
  /**
   * Requests that may wait for a slot when every candidate is at its
   * `max_inflight` (default 0: refused at once with 503 `overloaded`).
   */
  max_pending: number;
  /**
   * How often a backend address that names a host is looked up again, in
   * milliseconds (sooner when the answer's TTL is shorter).
   */
  dns_refresh_ms: number;
  /** Edge authentication of the pool's requests (API keys, JWT); none when absent. */
  auth?: AuthConfig;
  /** WebSockets through the pool; enabled with the defaults of {@link WebSocketConfig} when absent. */
  websocket?: WebSocketConfig;
}

/**
 * `websocket` of a pool: WebSocket handshakes (HTTP/1.1 `Upgrade`, extended
 * CONNECT over HTTP/2 and HTTP/3) and the limits of the tunnels they open.
 */
export interface WebSocketConfig {
  /** Whether WebSockets are forwarded (default true); when false a handshake is answered 501. */
  enabled: boolean;
  /** A WebSocket that carries no byte either way this long is closed, in milliseconds (default 300,000). */
  idle_timeout_ms: number;
  /** A WebSocket open this long is closed however busy, in milliseconds; no limit when absent. */
  max_duration_ms?: number;
}

/** A JWS algorithm the proxy verifies (`auth.jwt.algorithms`). */
export type JwtAlgorithm = "RS256" | "ES256" | "EdDSA" | "HS256";

/** `auth.api_keys` of a pool: a key in a request field, checked against a file of keys. */
export interface ApiKeysAuthConfig {
  /** The field carrying the key (lowercased). */
  header: string;
  /** File of keys, one per line (resolved path); re-read on every reload. */
  keys_file: string;
}

/** `auth.jwt` of a pool: `Authorization: Bearer <JWT>`, verified against a JWKS file. */
export interface JwtAuthConfig {
  /** JSON Web Key Set file (resolved path); re-read on every reload. */
  jwks_file: string;
  /** Algorithms accepted (a token's `alg` must be one of them). */
  algorithms: JwtAlgorithm[];
  /** Accepted `iss` values; empty: any issuer. */
  issuers: string[];
  /** Accepted `aud` values (one must match); empty: any audience. */
  audiences: string[];
  /** Leeway on `exp`, `nbf` and `iat`, in seconds. */
  clock_skew_s: number;
  /** Claims a valid token must carry (403 otherwise): name → value it must hold, or `null` for any value. */
  required_claims: Record<string, string | null>;
  /** Claims forwarded to the backend as request fields: claim name → field name (lowercased). */
  forward_claims: Record<string, string>;
}

/** `auth` of a pool: at least one of `api_keys` and `jwt`. */
export interface AuthConfig {
  /** API keys in a request field. */
  api_keys?: ApiKeysAuthConfig;
  /** JWT bearer tokens. */
  jwt?: JwtAuthConfig;
  /** Whether the credential field (the API key field, `authorization`) reaches the backend. */
  forward_credentials: boolean;
}

/** One entry of `rate_limits`: a named limit pools refer to by `rate_limit`. */
export interface RateLimitConfig {
  /** The limit's name: letters, digits, `_` and `-` (a `RateLimit-Policy` name and a metrics label). */
  name: string;
  /** Sustained rate per key, requests per second (> 0, fractions allowed). */
  requests_per_second: number;
  /** Requests a key may make at once with a full bucket (≥ 1). */
  burst: number;
  /** What requests are counted by: `client`, `header:<name>` (lowercased), `bearer` or `route`. */
  key: string;
  /** Also send `RateLimit-Policy` and `RateLimit` on responses under the limit (default false). */
  response_headers: boolean;
  /** Keys held per pool at most; past it the least recently used is dropped. */
  max_keys: number;
}

/** `log`: level and optional file output. */
export interface LogConfig {
  /** A level name from `shared/logging.ts` (`LEVEL_NAMES`), lowercased. */
  level: string;
  /** File output. */
  file: {
    /** Whether log lines also go to the file. */
    enabled: boolean;
    /** File path; `{service}` is replaced by the service name. */
    path: string;
  };
  /** The access log: one line per finished request, at level info. */
  access: AccessLogConfig;
}

/** `log.access` (`true`/`false` is short for `{enabled: true/false}`). */
export interface AccessLogConfig {
  /** Whether finished requests are logged (default true). */
  enabled: boolean;
  /** `text` (one readable line) or `json` (one object per line). */
  format: "text" | "json";
  /** A file of its own (created 0600); by default the lines go where the log goes. */
  file?: string;
}

/** `limits`: request and shutdown limits. */
export interface LimitsConfig {
  /** Largest accepted header section (RFC 9114 SETTINGS_MAX_FIELD_SECTION_SIZE), in bytes. */
  max_header_list_size: number;
  /** Largest accepted request body, in bytes. */
  max_request_body_bytes: number;
  /** How long a shutdown waits for open requests, in milliseconds. */
  drain_timeout_ms: number;
  /**
   * Longest wait for the next part of a request (its header section, or the
   * next piece of its body) before answering 408, in milliseconds.
   */
  request_idle_timeout_ms: number;
  /** Requests one client connection may have in flight to one pool; past it they wait, then 503. */
  max_backend_streams_per_connection: number;
  /** QPACK dynamic table offered to HTTP/3 clients (bytes; 0: none, no decoder stream). */
  qpack_max_table_capacity: number;
  /** A QUIC handshake not complete within this is closed, in milliseconds. */
  handshake_timeout_ms: number;
  /** QUIC handshakes under way at once; past it newcomers are refused. */
  max_handshakes: number;
  /** Open HTTP/3 connections; past it newcomers are refused. */
  max_connections: number;
  /** Handshakes and connections from one client address group. */
  max_connections_per_address: number;
  /** Unfinished handshakes from one address group. */
  max_handshakes_per_address: number;
  /** Unfinished handshakes from one network. */
  max_handshakes_per_network: number;
  /** New QUIC handshakes accepted per second. */
  max_handshake_rate: number;
  /** IPv4 prefix length of an address group. */
  address_prefix_v4: number;
  /** IPv6 prefix length of an address group. */
  address_prefix_v6: number;
  /** IPv4 prefix length of a network. */
  network_prefix_v4: number;
  /** IPv6 prefix length of a network. */
  network_prefix_v6: number;
  /** Receive buffer asked for the QUIC socket at startup, in bytes (0: the kernel's default). */
  udp_receive_buffer: number;
  /** Idle time after which a connection may be sent away when the table is nearly full (ms; 0: never). */
  idle_reclaim_ms: number;
  /** Open TCP fallback connections: `auto` (what the open-files limit leaves room for, ≤ 4096) or a number. */
  tcp_max_connections: "auto" | number;
  /** TLS handshake and first request head of a TCP fallback connection, in milliseconds. */
  tcp_header_timeout_ms: number;
  /** A TCP fallback connection with no request in flight is closed after this, in milliseconds. */
  tcp_idle_timeout_ms: number;
}

/** `admin`: the admin listener (`/health`, `/metrics`, `/admin/*`). */
export interface AdminConfig {
  /** Bind address; loopback by default. */
  address: string;
  /** TCP port; 0 picks a free port. */
  port: number;
  /** With a token, mutating calls need `Authorization: Bearer <token>` (the `admin` role). */
  token?: string;
  /** Tokens with roles, each read from its own file (re-read on every reload). */
  tokens: AdminTokenConfig[];
  /** CIDRs the admin listener serves (checked on the TCP peer first); absent: any peer. */
  allow?: string[];
  /** File of JSON lines: every mutating admin call and every refused one. */
  audit_log?: string;
  /** Open admin connections; past it a newcomer sheds one not serving a request, or is closed at once. */
  max_connections: number;
  /** First request head of an admin connection, in milliseconds. */
  header_timeout_ms: number;
  /** An admin connection with no request in flight is closed after this, in milliseconds. */
  idle_timeout_ms: number;
  /** `GET /ready`: what the proxy needs to call itself ready. */
  ready: AdminReadyConfig;
}

/** `admin.ready`: which pools must have an available backend for `GET /ready` to answer 200. */
export interface AdminReadyConfig {
  /** `all_pools` (every pool) or `any_pool` (at least one). */
  require: "all_pools" | "any_pool";
}

/** A role of the admin API, each allowed what the one before it is, and more. */
export type AdminRole = "viewer" | "operator" | "admin";

/** One entry of `admin.tokens`. */
export interface AdminTokenConfig {
  /** File holding the token (resolved path); its file name is the token's id in the audit log. */
  token_file: string;
  /** What the token may do. */
  role: AdminRole;
}

/** `passive_health`: outlier detection on live traffic. */
export interface PassiveHealthConfig {
  /** Whether live failures eject backends. */
  enabled: boolean;
  /** Connect failures or 5xx answers in a row that eject a backend. */
  consecutive_failures: number;
  /** How long an ejected backend stays out, in milliseconds. */
  eject_ms: number;
}

/** The validated configuration: defaults applied, snake_case keys as in the YAML file. */
export interface Config {
  /** Always 1. */
  version: 1;
  /** The HTTP/3 listener. */
  listen: ListenConfig;
  /** The pools, by name. */
  upstream: Record<string, UpstreamConfig>;
  /** Load balancing of the pools that do not set their own. */
  load_balancing: LoadBalancingConfig;
  /** Logging. */
  log: LogConfig;
  /** Request and shutdown limits. */
  limits: LimitsConfig;
  /** The admin listener; none when absent. */
  admin?: AdminConfig;
  /** Outlier detection on live traffic. */
  passive_health: PassiveHealthConfig;
  /** Addresses or CIDRs whose forwarding fields are believed (appended to, not replaced). */
  trusted_proxies: string[];
  /** Named rate limits, applied by the pools that name them. */
  rate_limits: RateLimitConfig[];
  /** Lookups of backend addresses that name a host. */
  dns: DnsConfig;
}

/**
 * `dns`: lookups of backend addresses that name a host (A and AAAA), each
 * pool's `dns_refresh_ms` apart.
 */
export interface DnsConfig {
  /** Name servers asked (`ip` or `ip:port`, IPv6 in brackets with a port); empty: the system's. */
  servers: string[];
  /** How long one lookup may take, in milliseconds. */
  timeout_ms: number;
}
