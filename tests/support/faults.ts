/**
 * What the fault tests share: a proxy configuration over given backends, the
 * request head of a GET, and a look at a process (alive, resident memory).
 *
 * @example
 * ```ts
 * import { faultConfig, getHead } from "./faults.ts";
 *
 * const yaml = faultConfig(["127.0.0.1:8080"], { requestTimeoutMs: 2000 });
 * const head = getHead("/", 8443);
 * ```
 *
 * @module
 */

/** Options of {@link faultConfig}. */
export interface FaultConfigOptions {
  /** Health check of every backend, as a YAML flow mapping (e.g. `{interval: 200}`). */
  healthCheck?: string;
  /** `request_timeout_ms` of the pool. */
  requestTimeoutMs?: number;
  /** Extra top-level YAML appended to the file (e.g. `limits:` or `log:`). */
  extra?: string;
  /** `listen.max_streams`. */
  maxStreams?: number;
}

/** A proxy configuration with one pool on `/` over the given backend addresses. */
export function faultConfig(addresses: string[], opts: FaultConfigOptions = {}): string {
  const health = opts.healthCheck ? `, health_check: ${opts.healthCheck}` : "";
  const backends = addresses
    .map((a, i) => `      - {id: b${i}, address: "${a}"${health}}`)
    .join("\n");
  const maxStreams = opts.maxStreams ? `, max_streams: ${opts.maxStreams}` : "";
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}${maxStreams}}
load_balancing: {type: round-robin}
upstream:
  root:
    route: {path_prefix: /}
    request_timeout_ms: ${opts.requestTimeoutMs ?? 5000}
    backends:
${backends}
${opts.extra ?? ""}
`;
}

/** The `limits` and `admin` entries {@link tcpFallbackConfig} adds, as YAML flow-mapping entries. */
export interface TcpFallbackExtra {
  /** Entries of `limits` (e.g. `tcp_max_connections: 10`). */
  limits?: string;
  /** More entries of `admin` (e.g. `max_connections: 5`). */
  admin?: string;
}

/**
 * A proxy configuration with the TCP fallback and the admin listener, one pool
 * on `/` over `backend`, info logs and no access log.
 */
export function tcpFallbackConfig(backend: string, extra: TcpFallbackExtra = {}): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tcp_fallback: true, tls: {cert: "{{cert}}", key: "{{key}}"}}
limits: {${extra.limits ?? ""}}
admin: {address: 127.0.0.1, port: 0${extra.admin ? `, ${extra.admin}` : ""}}
log: {level: info, access: false}
upstream:
  api: {route: {path_prefix: /}, backends: [{id: a, address: "${backend}"}]}
`;
}

/** Resident set size of a process in bytes (Linux `/proc/<pid>/status`). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** Whether a process is still running (and not a zombie). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Formats bytes as MiB with one decimal. */
export function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** The request fields of a GET on `path` (static-table QPACK via the test client). */
export function getHead(path: string, port: number): Array<[string, string]> {
  return [
    [":method", "GET"],
    [":scheme", "https"],
    [":authority", `localhost:${port}`],
    [":path", path],
  ];
}
