/**
 * Loads the proxy's YAML configuration: YAML → zod → deeply frozen
 * {@link Config}. Every problem is reported at once, each with its dotted key
 * path and the YAML line it comes from.
 *
 * @example
 * ```ts
 * import { formatProblem, loadConfig } from "./load.ts";
 * const result = await loadConfig("examples/proxy.yaml");
 * if (result.ok) {
 *   // result.config.listen.port ...
 * } else if (result.kind === "load") {
 *   // `Error loading config: ${result.message}`
 * } else {
 *   for (const p of result.problems) formatProblem(p);
 * }
 * ```
 * @module
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { type Config, ConfigSchema } from "./schema.ts";
import {
  certificateValidity,
  MAX_CONFIG_BYTES,
  type PemKind,
  readBoundedFile,
  readPemFile,
  readPemFileSync,
} from "./_files.ts";
import { issueMessage } from "./_issues.ts";
import { readConfigSecrets } from "./_secret_files.ts";
import type { ConfigSecrets } from "./secrets.ts";
import { knownKeys, nearestKey } from "./_hints.ts";
import { takeRemovedKeys } from "./_removed_keys.ts";
import { formatPath, type KeyPath, lineOfPath } from "./_yaml_lines.ts";

/** One configuration problem: where it is and what is wrong. */
export interface ConfigProblem {
  /** Dotted key path, e.g. `upstream.api.backends[1].address`; `""` for the whole file. */
  path: string;
  /** 1-based line in the YAML file (for a missing key: its parent's line). */
  line?: number;
  /** What is wrong, e.g. `must be host:port (...)`. */
  message: string;
}

/**
 * The outcome of loading a configuration.
 * - `ok: true`: the validated, deeply frozen configuration.
 * - `kind: "load"`: the file could not be read, or is not valid YAML (the
 *   message then includes `line:column`).
 * - `kind: "invalid"`: valid YAML that breaks the schema; all problems, sorted by line.
 */
export type LoadResult =
  | {
    ok: true;
    config: Config;
    /**
     * Things that do not stop the proxy but should be fixed (an expired
     * certificate, a removed key whose value is what the proxy now does).
     */
    warnings: ConfigProblem[];
    /** The certificate and key texts as read and checked (absent when files were not checked). */
    pem?: TlsPem;
    /**
     * What the key, token and client certificate files hold, read and
     * checked (absent when files were not read: {@link parseConfigText}).
     */
    secrets?: ConfigSecrets;
  }
  | { ok: false; kind: "load"; message: string }
  | { ok: false; kind: "invalid"; problems: ConfigProblem[] };

/** The PEM texts of `listen.tls.cert` and `listen.tls.key`. */
export interface TlsPem {
  /** The certificate chain (PEM). */
  cert: string;
  /** The private key (PEM). */
  key: string;
}

/** Why a certificate and key cannot be used together, and which of the two keys to blame. */
export interface TlsPairProblem {
  /** The key to blame: `listen.tls.cert` or `listen.tls.key`. */
  at: PemKind;
  /** What is wrong. */
  message: string;
}

/** Options of {@link parseConfigText}. */
export interface ParseOptions {
  /** Directory that relative `listen.tls` paths are resolved against (the config file's). */
  baseDir?: string;
  /** Check that the certificate and key files exist and hold PEM blocks (default true). */
  checkFiles?: boolean;
  /** Clock for the certificate validity warnings (ms since the epoch); default `Date.now`. */
  now?: () => number;
}

/** Options of {@link loadConfig}. */
export interface LoadOptions {
  /**
   * Loads the certificate and key the way the listener will and says why
   * they cannot be used together (e.g. a key that is not the certificate's),
   * or `null`. Injected by `main.ts`, which may touch the QUIC API; without
   * it, only the files themselves are checked.
   */
  checkTlsPair?: (pem: TlsPem) => Promise<TlsPairProblem | null>;
  /**
   * Looks up the backend addresses that name a host and says which do not
   * resolve, each at the key path of a backend naming it: warnings, never
   * problems (a name may resolve later). Injected by `main.ts` (DNS is I/O);
   * without it, names are not looked up.
   */
  checkBackendNames?: (config: Config) => Promise<BackendNameWarning[]>;
  /** Clock for the certificate validity warnings (ms since the epoch); default `Date.now`. */
  now?: () => number;
}

/** A backend address that did not resolve, where the configuration names it. */
export interface BackendNameWarning {
  /** Key path of the address (`["upstream", "api", "backends", 0, "address"]`). */
  readonly path: readonly (string | number)[];
  /** What happened, and what the proxy does meanwhile. */
  readonly message: string;
}

/** The most YAML syntax errors spelled out in one message. */
const MAX_YAML_ERRORS = 5;

/**
 * Formats a problem as one line: `upstream.api.backends[0].address (line 12): must be host:port`.
 * A problem of the whole file uses the word `configuration` as its path.
 */
export function formatProblem(p: ConfigProblem): string {
  const where = p.path === "" ? "configuration" : p.path;
  return p.line === undefined
    ? `${where}: ${p.message}`
    : `${where} (line ${p.line}): ${p.message}`;
}

/**
 * Reads and validates the configuration file at `path`. Relative certificate
 * and key paths are resolved against the file's directory, and the returned
 * config holds the resolved paths. Every file is read off the event loop,
 * only if it is a regular file, and never past a size bound, so a reload
 * pointed at a FIFO or a device cannot hang or exhaust the process.
 */
export async function loadConfig(path: string, opts: LoadOptions = {}): Promise<LoadResult> {
  const read = await readBoundedFile(path, MAX_CONFIG_BYTES);
  if (!read.ok) return { ok: false, kind: "load", message: describeReadError(path, read.problem) };
  const v = validateText(read.text, dirname(resolve(path)));
  if (!v.ok) return v;
  const pem: Partial<TlsPem> = {};
  await Promise.all((["cert", "key"] as const).map(async (kind) => {
    const file = v.tlsPaths[kind];
    if (file === undefined) return;
    const got = await readPemFile(file, kind);
    if (got.ok) pem[kind] = got.text;
    else v.add(["listen", "tls", kind], got.problem);
  }));
  if (opts.checkTlsPair && pem.cert !== undefined && pem.key !== undefined) {
    const problem = await opts.checkTlsPair({ cert: pem.cert, key: pem.key });
    if (problem !== null) v.add(["listen", "tls", problem.at], problem.message);
  }
  if (opts.checkBackendNames && v.config !== undefined) {
    for (const w of await opts.checkBackendNames(v.config)) v.warn(w.path, w.message);
  }
  const now = opts.now ?? Date.now;
  const secrets = v.config === undefined ? undefined : await readConfigSecrets(v.config, v, now());
  return v.finish(pem, now, secrets);
}

/**
 * Validates configuration text (synchronous). With `checkFiles` (default true)
 * the certificate and key files must exist and hold PEM blocks; relative paths
 * are resolved against `baseDir` when given (and then stored resolved in the
 * config), else against the working directory.
 */
export function parseConfigText(
  text: string,
  opts: ParseOptions = {},
): LoadResult {
  const v = validateText(text, opts.baseDir);
  if (!v.ok) return v;
  const pem: Partial<TlsPem> = {};
  if (opts.checkFiles ?? true) {
    for (const kind of ["cert", "key"] as const) {
      const file = v.tlsPaths[kind];
      if (file === undefined) continue;
      const got = readPemFileSync(file, kind);
      if (got.ok) pem[kind] = got.text;
      else v.add(["listen", "tls", kind], got.problem);
    }
  }
  return v.finish(pem, opts.now ?? Date.now);
}

/** A parsed, schema-checked text whose file checks are still to be added. */
interface Validation {
  ok: true;
  tlsPaths: Partial<Record<PemKind, string>>;
  /** The schema's output, its file paths resolved; absent when the schema found problems. */
  config?: Config;
  /** Adds a problem at a key path (its line is looked up). */
  add(path: KeyPath, message: string): void;
  /** Adds a warning at a key path. */
  warn(path: KeyPath, message: string): void;
  /** The result: the problems, or the frozen config with warnings. */
  finish(pem: Partial<TlsPem>, now: () => number, secrets?: ConfigSecrets): LoadResult;
}

function validateText(
  text: string,
  baseDir: string | undefined,
): Validation | Extract<LoadResult, { kind: "load" }> {
  const lines = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter: lines,
    prettyErrors: false,
    merge: true,
    uniqueKeys: true,
  });
  if (doc.errors.length > 0) {
    const shown = doc.errors.slice(0, MAX_YAML_ERRORS).map((e) => {
      const { line, col } = lines.linePos(e.pos[0]);
      return `line ${line}:${col}: ${firstLine(e.message)}`;
    });
    const more = doc.errors.length - shown.length;
    return {
      ok: false,
      kind: "load",
      message: `invalid YAML at ${shown.join("; ")}${more > 0 ? ` (and ${more} more)` : ""}`,
    };
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return { ok: false, kind: "load", message: `invalid YAML: ${errorText(error)}` };
  }

  const problems: ConfigProblem[] = [];
  const at = (path: KeyPath, message: string): ConfigProblem => ({
    path: formatPath(path),
    line: lineOfPath(doc, lines, path),
    message,
  });
  const add = (path: KeyPath, message: string) => problems.push(at(path, message));

  const removed = takeRemovedKeys(raw);
  for (const r of removed) if (r.severity === "error") add(r.path, r.message);
  const parsed = z.safeParse(ConfigSchema, raw, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.path.length === 0 && raw == null) {
        add([], "the file is empty; expected a mapping with version, listen and upstream");
      } else if (issue.code === "unrecognized_keys") {
        const known = knownKeys(ConfigSchema, issue.path);
        for (const key of issue.keys) {
          const near = nearestKey(key, known);
          add(
            [...issue.path, key],
            near === null ? "unknown key" : `unknown key (did you mean \`${near}\`?)`,
          );
        }
      } else {
        add(issue.path, issueMessage(issue));
      }
    }
  }

  const tlsPaths: Partial<Record<PemKind, string>> = {};
  for (const kind of ["cert", "key"] as const) {
    const given = tlsValue(raw, kind);
    if (given === undefined) continue;
    tlsPaths[kind] = baseDir !== undefined && !isAbsolute(given) ? resolve(baseDir, given) : given;
  }

  const fileWarnings: ConfigProblem[] = [];
  if (parsed.success) resolveFilePaths(parsed.data, baseDir);
  const finish = (
    pem: Partial<TlsPem>,
    now: () => number,
    secrets?: ConfigSecrets,
  ): LoadResult => {
    if (!parsed.success || problems.length > 0) {
      return { ok: false, kind: "invalid", problems: sortByLine(problems) };
    }
    const config = parsed.data;
    if (tlsPaths.cert !== undefined) config.listen.tls.cert = tlsPaths.cert;
    if (tlsPaths.key !== undefined) config.listen.tls.key = tlsPaths.key;
    const warnings = removed.filter((r) => r.severity === "warning").map((r) =>
      at(r.path, r.message)
    );
    warnings.push(...fileWarnings);
    if (pem.cert !== undefined) {
      const w = validityWarning(pem.cert, now());
      if (w !== null) warnings.push(at(["listen", "tls", "cert"], w));
    }
    const result: LoadResult = { ok: true, config: deepFreeze(config), warnings };
    if (pem.cert !== undefined && pem.key !== undefined) {
      result.pem = { cert: pem.cert, key: pem.key };
    }
    if (secrets !== undefined) result.secrets = secrets;
    return result;
  };
  return {
    ok: true,
    tlsPaths,
    config: parsed.success && problems.length === 0 ? parsed.data : undefined,
    add,
    warn: (path, message) => fileWarnings.push(at(path, message)),
    finish,
  };
}

/**
 * Resolves the paths of the files a configuration reads against the
 * configuration file's folder (`baseDir`; none: left as written): a
 * backend's `tls.ca`, `tls.cert` and `tls.key`, each pool's
 * `auth.api_keys.keys_file` and `auth.jwt.jwks_file`, and every
 * `admin.tokens[].token_file`. Files the proxy writes (logs, the audit
 * log) are taken as written.
 */
function resolveFilePaths(config: Config, baseDir: string | undefined): void {
  if (baseDir === undefined) return;
  const at = (path: string) => isAbsolute(path) ? path : resolve(baseDir, path);
  for (const pool of Object.values(config.upstream)) {
    for (const b of pool.backends) {
      const tls = b.tls;
      if (tls === undefined) continue;
      if (tls.ca !== undefined) tls.ca = at(tls.ca);
      if (tls.cert !== undefined) tls.cert = at(tls.cert);
      if (tls.key !== undefined) tls.key = at(tls.key);
    }
    const auth = pool.auth;
    if (auth?.api_keys !== undefined) auth.api_keys.keys_file = at(auth.api_keys.keys_file);
    if (auth?.jwt !== undefined) auth.jwt.jwks_file = at(auth.jwt.jwks_file);
  }
  for (const t of config.admin?.tokens ?? []) t.token_file = at(t.token_file);
}

/** A warning when the certificate is expired or not valid yet at `now`, else `null`. */
function validityWarning(certPem: string, now: number): string | null {
  const validity = certificateValidity(certPem);
  if (validity === null) return null;
  if (validity.notAfter.getTime() < now) {
    return `the certificate expired on ${validity.notAfter.toISOString()}; ` +
      "clients will refuse it until it is renewed";
  }
  if (validity.notBefore.getTime() > now) {
    return `the certificate is not valid before ${validity.notBefore.toISOString()}; ` +
      "clients will refuse it until then";
  }
  return null;
}

/** `listen.tls.<kind>` of the raw YAML value, when it is a non-empty string. */
function tlsValue(raw: unknown, kind: PemKind): string | undefined {
  const listen = (raw as { listen?: unknown } | null)?.listen;
  const tls = (listen as { tls?: unknown } | null | undefined)?.tls;
  const value = (tls as Record<string, unknown> | null | undefined)?.[kind];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function sortByLine(problems: ConfigProblem[]): ConfigProblem[] {
  const at = (p: ConfigProblem) => p.line ?? Number.MAX_SAFE_INTEGER;
  return problems
    .map((p, i) => ({ p, i }))
    .sort((a, b) => at(a.p) - at(b.p) || a.i - b.i)
    .map(({ p }) => p);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function firstLine(message: string): string {
  return message.split("\n", 1)[0].trim();
}

function errorText(error: unknown): string {
  return error instanceof Error ? firstLine(error.message) : String(error);
}

/** `Error loading config:` text for a configuration file that cannot be read. */
function describeReadError(path: string, problem: string): string {
  if (problem.startsWith("file not found:")) return `configuration file not found: ${path}`;
  if (problem.startsWith("cannot read ") || problem.startsWith(path)) {
    return problem.replace(/^cannot read /, "cannot read configuration file ");
  }
  return `cannot read configuration file ${path}: ${problem}`;
}
