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
import { checkPemFile, type PemKind } from "./_files.ts";
import { issueMessage } from "./_issues.ts";
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
  | { ok: true; config: Config }
  | { ok: false; kind: "load"; message: string }
  | { ok: false; kind: "invalid"; problems: ConfigProblem[] };

/** Options of {@link parseConfigText}. */
export interface ParseOptions {
  /** Directory that relative `listen.tls` paths are resolved against (the config file's). */
  baseDir?: string;
  /** Check that the certificate and key files exist and hold PEM blocks (default true). */
  checkFiles?: boolean;
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
 * config holds the resolved paths.
 */
export async function loadConfig(path: string): Promise<LoadResult> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    return { ok: false, kind: "load", message: describeReadError(path, error) };
  }
  return parseConfigText(text, { baseDir: dirname(resolve(path)) });
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
  const add = (path: KeyPath, message: string) =>
    problems.push({ path: formatPath(path), line: lineOfPath(doc, lines, path), message });

  const parsed = z.safeParse(ConfigSchema, raw, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.path.length === 0 && raw == null) {
        add([], "the file is empty; expected a mapping with version, listen and upstream");
      } else if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) add([...issue.path, key], "unknown key");
      } else {
        add(issue.path, issueMessage(issue));
      }
    }
  }

  const tlsPaths: Partial<Record<PemKind, string>> = {};
  for (const kind of ["cert", "key"] as const) {
    const given = tlsValue(raw, kind);
    if (given === undefined) continue;
    const path = opts.baseDir !== undefined && !isAbsolute(given)
      ? resolve(opts.baseDir, given)
      : given;
    tlsPaths[kind] = path;
    if (opts.checkFiles ?? true) {
      const problem = checkPemFile(path, kind);
      if (problem !== null) add(["listen", "tls", kind], problem);
    }
  }

  if (!parsed.success || problems.length > 0) {
    return { ok: false, kind: "invalid", problems: sortByLine(problems) };
  }
  const config = parsed.data;
  if (tlsPaths.cert !== undefined) config.listen.tls.cert = tlsPaths.cert;
  if (tlsPaths.key !== undefined) config.listen.tls.key = tlsPaths.key;
  return { ok: true, config: deepFreeze(config) };
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

function describeReadError(path: string, error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return `configuration file not found: ${path}`;
  if (error instanceof Deno.errors.IsADirectory) return `${path} is a directory, not a file`;
  if (error instanceof Deno.errors.PermissionDenied) {
    return `cannot read configuration file ${path}: permission denied`;
  }
  if (error instanceof Deno.errors.NotCapable) {
    return `cannot read configuration file ${path}: read access not granted (run with --allow-read)`;
  }
  return `cannot read configuration file ${path}: ${errorText(error)}`;
}
