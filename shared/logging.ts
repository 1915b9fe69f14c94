/**
 * Logging setup shared by the proxy ("spooky") and the payments API.
 *
 * Library modules only ever call `getLogger([...])` from `@logtape/logtape`;
 * the `main.ts` files call {@link setupLogging} once at start-up with values
 * taken from the config file, the CLI and `RUST_LOG`.
 *
 * Output lines look like:
 *
 * ```text
 * [2026-01-02 03:04:05] [INFO] [proxy::health] backend b1 is healthy
 * ```
 *
 * @example
 * ```ts
 * import { getLogger } from "@logtape/logtape";
 * import { setupLogging } from "./logging.ts";
 *
 * await setupLogging({ service: "spooky", level: "ghost", rustLog: Deno.env.get("RUST_LOG") });
 * getLogger(["proxy", "health"]).info("backend {id} is healthy", { id: "b1" });
 * ```
 *
 * @module
 */

import { configure, type LogRecord, reset, type Sink } from "@logtape/logtape";
import {
  CREDIT_CARD_NUMBER_PATTERN,
  JWT_PATTERN,
  redactByField,
  redactByPattern,
  type RedactionPattern,
} from "@logtape/redaction";
import { activeSpanIds, denoTracingOn, type SpanIds } from "./telemetry.ts";

/** Raised for any invalid logging configuration (bad level, bad RUST_LOG, unwritable file). */
export class LogConfigError extends Error {
  /**
   * Creates the error.
   *
   * @param message what is wrong, naming the bad value.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LogConfigError";
  }
}

/** A LogTape level, least severe first (the same union as LogTape's own `LogLevel`). */
export type LogLevel = "trace" | "debug" | "info" | "warning" | "error" | "fatal";

/** A level accepted by {@link parseLevel}: a LogTape level, or `"off"` to log nothing. */
export type LevelOrOff = LogLevel | "off";

/** The fields of a LogTape record that {@link formatLine} reads (every LogTape `LogRecord` has them). */
export interface LogLine {
  /** Logger category, e.g. `["proxy", "health"]`. */
  readonly category: readonly string[];
  /** Severity. */
  readonly level: LogLevel;
  /** Message parts: text at even indexes, values at odd ones. */
  readonly message: readonly unknown[];
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
}

/**
 * Every accepted level name (lower case) and the LogTape level it means.
 * The spec's names come first, then the standard names.
 */
export const LEVEL_NAMES: Readonly<Record<string, LevelOrOff>> = Object.freeze({
  whisper: "trace",
  haunt: "debug",
  ghost: "info",
  spooky: "info",
  scream: "warning",
  poltergeist: "error",
  silence: "off",
  trace: "trace",
  debug: "debug",
  info: "info",
  warn: "warning",
  warning: "warning",
  error: "error",
  off: "off",
});

/**
 * The level a name in {@link LEVEL_NAMES} means, in any case (no trimming),
 * or `null` for an unknown name.
 *
 * @example
 * ```ts
 * lookupLevel("Scream"); // "warning"
 * lookupLevel("loud");   // null
 * ```
 */
export function lookupLevel(name: string): LevelOrOff | null {
  const key = name.toLowerCase();
  return Object.hasOwn(LEVEL_NAMES, key) ? LEVEL_NAMES[key] : null;
}

/**
 * Parses a level name, case-insensitively: whisper (trace), haunt (debug),
 * ghost or spooky (info), scream (warn), poltergeist (error), silence (off), and
 * the standard trace, debug, info, warn/warning, error, off.
 *
 * @throws {LogConfigError} for an unknown name; the message names the bad
 * value and lists the accepted ones.
 * @example
 * ```ts
 * parseLevel("Haunt"); // "debug"
 * parseLevel("warn"); // "warning"
 * ```
 */
export function parseLevel(name: string): LogLevel | "off" {
  const level = lookupLevel(name.trim());
  if (level !== null) return level;
  throw new LogConfigError(
    `unknown log level ${JSON.stringify(name)}; accepted: ${Object.keys(LEVEL_NAMES).join(", ")}`,
  );
}

/** The parsed form of a `RUST_LOG` value. */
export interface RustLogSpec {
  /** The global level, if the value names one. */
  global?: LevelOrOff;
  /** Per-module levels; the key is the LogTape category joined with `::`. */
  modules: Map<string, LevelOrOff>;
}

const MODULE_PATH = /^[A-Za-z0-9_.-]+(?:::[A-Za-z0-9_.-]+)*$/;

/**
 * Parses a `RUST_LOG`-style value: a global level (`debug`), or comma-separated
 * items mixing one global level and `module::path=level` pairs
 * (`info,proxy::health=trace`). Empty items are ignored; a later item for the
 * same target wins.
 *
 * @throws {LogConfigError} for a bad level or module path.
 */
export function parseRustLog(value: string): RustLogSpec {
  const spec: RustLogSpec = { modules: new Map() };
  for (const raw of value.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const eq = item.indexOf("=");
    if (eq < 0) {
      spec.global = parseRustLevel(item, value);
      continue;
    }
    const path = item.slice(0, eq).trim();
    if (!MODULE_PATH.test(path)) {
      throw new LogConfigError(
        `invalid RUST_LOG ${JSON.stringify(value)}: bad module path ${
          JSON.stringify(path)
        } (expected e.g. proxy::health=trace)`,
      );
    }
    spec.modules.set(path, parseRustLevel(item.slice(eq + 1), value));
  }
  return spec;
}

function parseRustLevel(name: string, whole: string): LevelOrOff {
  try {
    return parseLevel(name);
  } catch (cause) {
    throw new LogConfigError(
      `invalid RUST_LOG ${JSON.stringify(whole)}: ${(cause as Error).message}`,
      { cause },
    );
  }
}

const LEVEL_LABELS: Readonly<Record<LogLevel, string>> = {
  trace: "TRACE",
  debug: "DEBUG",
  info: "INFO",
  warning: "WARN",
  error: "ERROR",
  fatal: "ERROR",
};

function renderValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  return Deno.inspect(value, { depth: 6, colors: false, breakLength: Infinity, compact: true });
}

/**
 * Formats one record as `[YYYY-MM-DD HH:MM:SS] [LEVEL] [a::b] message` (UTC,
 * no trailing newline, no redaction). String values are inserted as they are;
 * other values are shown with `Deno.inspect`.
 *
 * @example
 * ```ts
 * formatLine({ category: ["proxy", "health"], level: "info", message: ["up"], timestamp: 0 });
 * // "[1970-01-01 00:00:00] [INFO] [proxy::health] up"
 * ```
 */
export function formatLine(record: LogLine): string {
  const time = new Date(record.timestamp).toISOString().slice(0, 19).replace("T", " ");
  let text = "";
  for (let i = 0; i < record.message.length; i++) {
    text += i % 2 === 0 ? String(record.message[i]) : renderValue(record.message[i]);
  }
  return `[${time}] [${LEVEL_LABELS[record.level] ?? record.level.toUpperCase()}] [${
    record.category.join("::")
  }] ${text}`;
}

const REDACTED = "[REDACTED]";

/** One path segment's characters (what ends a segment: `/ ? # & ; , ) ] }`, quotes, space). */
const SEGMENT = "[^/\\s?#&;,)\\]}\"']";

/** Keys whose values are secrets in `key=value`, `key: value` and JSON-ish text. */
const SECRET_KEYS =
  "[\\w-]*(?:password|passwd|passphrase|secret|token|api[_-]?key)|cvc|cvv2?|card[_-]?number|account[_-]?number|pan";

/** Redaction patterns applied to every formatted line, in order. */
export const REDACTION_PATTERNS: readonly RedactionPattern[] = [
  {
    // Authorization headers: redact the scheme's credentials, keep the scheme.
    pattern:
      /((?<![\w-])["']?(?:proxy-)?authorization["']?\s*[:=]\s*["']?)(?:(bearer|basic|digest|token)\s+)?[^\s"',;}]+/gi,
    replacement: (_m: string, head: string, scheme?: string) =>
      `${head}${scheme ? `${scheme} ` : ""}${REDACTED}`,
  },
  {
    // key=value, key: value, "key": "value", 'key': 'value'
    pattern: new RegExp(
      `((?<![\\w-])(["']?)(?:${SECRET_KEYS})\\2\\s*[:=]\\s*)("(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s,;&}\\]"']+)`,
      "gi",
    ),
    replacement: (_m: string, head: string, _q: string, value: string) =>
      `${head}${
        value.startsWith('"') ? `"${REDACTED}"` : value.startsWith("'") ? `'${REDACTED}'` : REDACTED
      }`,
  },
  {
    // A bearer token anywhere else.
    pattern: /\b(bearer)\s+(?!\[REDACTED\])[A-Za-z0-9\-._~+/]+=*/gi,
    replacement: (_m: string, scheme: string) => `${scheme} ${REDACTED}`,
  },
  {
    // A path segment named after a secret carries one in the next segment:
    // /payments/tokens/{token}, /api-keys/{key}, /bearer/{token}.
    pattern: new RegExp(
      `(/(?:[\\w-]*(?:tokens?|secrets?|passwords?|passwd|passphrase|api[_-]?keys?|credentials?)|bearer)/)` +
        `(?!\\[REDACTED\\])${SEGMENT}+`,
      "gi",
    ),
    replacement: (_m: string, head: string) => `${head}${REDACTED}`,
  },
  {
    // One-time payment tokens (tok_...) wherever they appear.
    pattern: /\b(tok_)[A-Za-z0-9]{8,}/g,
    replacement: (_m: string, prefix: string) => `${prefix}${REDACTED}`,
  },
  {
    // A bearer-looking path segment or query value: 32+ characters of the
    // base64url / token alphabet mixing upper case, lower case and digits,
    // or 32+ hex digits (ids such as ch_01M86GGC8E9GP0RFPMH3BPF1 and UUIDs stay).
    pattern: new RegExp(
      `(?<=[/=])(?:(?=[\\w.~+-]*[A-Z])(?=[\\w.~+-]*[a-z])(?=[\\w.~+-]*\\d)[\\w.~+-]{32,}={0,2}` +
        `|[0-9A-Fa-f]{32,})(?=$|[^\\w.~+=-])`,
      "g",
    ),
    replacement: REDACTED,
  },
  JWT_PATTERN,
  CREDIT_CARD_NUMBER_PATTERN,
];

/** Property / placeholder names whose values are replaced before formatting. */
const SECRET_FIELDS: RegExp[] = [
  /pass(?:word|wd|phrase|code)/i,
  /secret/i,
  /token/i,
  /api[_-]?key/i,
  /authorization/i,
  /^(?:cvc|cvv2?)$/i,
  /card[_-]?number/i,
  /account[_-]?number/i,
  /^pan$/i,
];

/**
 * Formats a record with {@link formatLine} and then redacts card numbers,
 * bearer tokens, JWTs and secret `key=value` pairs from the text, and from
 * request paths: the segment after one named after a secret
 * (`/payments/tokens/[REDACTED]`), one-time tokens (`tok_[REDACTED]`) and
 * bearer-looking segments or query values (32+ characters mixing cases and
 * digits, or 32+ hex digits).
 */
export const redactedFormatLine: (record: LogLine) => string = redactByPattern(
  formatLine,
  REDACTION_PATTERNS,
) as (record: LogLine) => string;

/** Options for {@link setupLogging}. */
export interface LoggingOptions {
  /** Service name, e.g. "spooky" or "payments"; used in the default file path. */
  service: string;
  /** Level name (see {@link parseLevel}); default "ghost" (info). */
  level?: string;
  /** File output; when enabled, lines go to the file instead of stderr. */
  file?: { enabled?: boolean; path?: string };
  /** The `RUST_LOG` value, which overrides `level` when set and non-empty. */
  rustLog?: string;
  /** Receives each line (without newline) instead of stderr or the file; for tests. */
  sink?: (line: string) => void;
  /**
   * The ids of the active span, appended to each line written while one is
   * active (` trace_id=… span_id=…`). Default: the active OpenTelemetry span's
   * when Deno exports traces (`shared/telemetry.ts`), else none, and then a
   * line costs nothing more.
   */
  spanIds?: () => { readonly traceId: string; readonly spanId: string } | undefined;
}

/**
 * A line of {@link redactedFormatLine} with the span ids a record carries
 * (put there by {@link withSpanIds}) appended after redaction, which would
 * take 32 hex digits after `=` for a secret.
 */
function lineWithSpanIds(record: LogRecord): string {
  const line = redactedFormatLine(record);
  const traceId = record.properties.trace_id;
  const spanId = record.properties.span_id;
  return typeof traceId === "string" && typeof spanId === "string"
    ? `${line} trace_id=${traceId} span_id=${spanId}`
    : line;
}

/** `sink`, given each record with the ids of the span active when it was logged, if any. */
function withSpanIds(sink: Sink, spanIds: () => SpanIds | undefined): Sink {
  return (record) => {
    const ids = spanIds();
    if (ids === undefined) return sink(record);
    sink({
      ...record,
      properties: { ...record.properties, trace_id: ids.traceId, span_id: ids.spanId },
    });
  };
}

const encoder = new TextEncoder();

function writeStderr(line: string): void {
  const bytes = encoder.encode(line + "\n");
  let off = 0;
  while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
}

/** Default file path: `/var/log/{service}/{service}.log`. */
export const DEFAULT_LOG_FILE = "/var/log/{service}/{service}.log";

/**
 * The log file path for a service: `path` (default {@link DEFAULT_LOG_FILE})
 * with every `{service}` replaced by the service name.
 *
 * @example
 * ```ts
 * resolveLogFilePath("spooky"); // "/var/log/spooky/spooky.log"
 * ```
 */
export function resolveLogFilePath(service: string, path: string = DEFAULT_LOG_FILE): string {
  return path.replaceAll("{service}", service);
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  if (i < 0) return ".";
  return i === 0 ? "/" : path.slice(0, i);
}

/**
 * Creates the log file readable and writable by its owner only (0600; its
 * folder, when created, 0700), since a log line may carry what redaction
 * missed. An existing file keeps its mode: an operator may have chosen it.
 */
function prepareLogFile(path: string): void {
  try {
    Deno.mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    Deno.openSync(path, { append: true, create: true, mode: 0o600 }).close();
  } catch (cause) {
    throw new LogConfigError(
      `cannot write log file ${JSON.stringify(path)}: ${(cause as Error).message}`,
      { cause },
    );
  }
}

/**
 * (Re)configures LogTape for a service: one sink (stderr, a file, or the
 * test `sink`), the line format of {@link formatLine}, redaction of secrets,
 * and levels from `level` overridden by `rustLog`.
 *
 * `rustLog` may be a global level or items like `info,proxy::health=trace`;
 * `proxy::health` is the LogTape category `["proxy","health"]` and the level
 * applies to it and its children.
 *
 * @throws {LogConfigError} for a bad level, a bad `rustLog`, or a log file
 * that cannot be created or opened for append.
 */
export async function setupLogging(opts: LoggingOptions): Promise<void> {
  let global = parseLevel(opts.level ?? "ghost");
  let modules = new Map<string, LevelOrOff>();
  if (opts.rustLog !== undefined && opts.rustLog.trim() !== "") {
    const spec = parseRustLog(opts.rustLog);
    if (spec.global !== undefined) global = spec.global;
    modules = spec.modules;
  }

  // Decided once: without tracing, a line is formatted as it always was.
  const spanIds = opts.spanIds ?? (denoTracingOn() ? activeSpanIds : undefined);
  const format = spanIds === undefined ? redactedFormatLine : lineWithSpanIds;
  let base: Sink;
  if (opts.sink) {
    const target = opts.sink;
    base = (record) => target(format(record));
  } else if (opts.file?.enabled) {
    const path = resolveLogFilePath(opts.service, opts.file.path);
    prepareLogFile(path);
    // Loaded only when a file is asked for: it is not on the default start path.
    const { getFileSink } = await import("@logtape/file");
    base = getFileSink(path, { formatter: (record) => format(record) + "\n" });
  } else {
    base = (record) => writeStderr(format(record));
  }
  const redacted = redactByField(base, { fieldPatterns: SECRET_FIELDS, action: () => REDACTED });
  const sink = spanIds === undefined ? redacted : withSpanIds(redacted, spanIds);

  const lowest = (level: LevelOrOff): LogLevel | null => level === "off" ? null : level;
  const levels = new Map<string, LevelOrOff>([["", global], ["logtape::meta", "warning"]]);
  for (const [path, level] of modules) levels.set(path, level);

  await configure({
    reset: true,
    sinks: { main: sink },
    loggers: [...levels].map(([path, level]) => ({
      category: path === "" ? [] : path.split("::"),
      sinks: ["main"],
      parentSinks: "override" as const,
      lowestLevel: lowest(level),
    })),
  });
}

/** Flushes and closes the sinks and removes the LogTape configuration. */
export async function teardownLogging(): Promise<void> {
  await reset();
}

/**
 * Applies {@link REDACTION_PATTERNS} to a piece of text (a request path, a
 * header value) on its own, for writers that format outside LogTape, such as
 * the proxy's access log.
 *
 * @example
 * ```ts
 * redactText("/payments/tokens/tok_abcdefgh1234?x=1"); // "/payments/tokens/[REDACTED]?x=1"
 * ```
 */
export function redactText(text: string): string {
  let out = text;
  for (const { pattern, replacement } of REDACTION_PATTERNS) {
    out = out.replace(pattern, replacement as (substring: string, ...args: string[]) => string);
  }
  return out;
}
