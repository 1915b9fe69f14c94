/**
 * The proxy's `log` settings applied to the process: whether the log files
 * can be written (checked at startup, by `--check`, and before a reload
 * changes anything), a reloaded configuration's level, log file and access
 * log, and the access log itself.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { parseRustLog, resolveLogFilePath, setupLogging } from "../shared/logging.ts";
import { PRODUCT } from "../shared/version.ts";
import type { Config } from "./config/schema.ts";
import { type AccessLog, createAccessLog } from "./access_log.ts";
import type { RequestSink } from "./request_log.ts";

/**
 * Whether the log file, the access-log file and the admin audit log of
 * `config` can be opened for append (created, 0600, if missing, as startup would), and whether
 * `RUST_LOG` parses: one line per problem, naming its key.
 */
export function checkLogFiles(config: Config): string[] {
  const files: Array<[string, string]> = [];
  if (config.log.file.enabled) {
    files.push(["log.file.path", resolveLogFilePath(PRODUCT, config.log.file.path)]);
  }
  if (config.log.access.enabled && config.log.access.file !== undefined) {
    files.push(["log.access.file", config.log.access.file]);
  }
  if (config.admin?.audit_log !== undefined) {
    files.push(["admin.audit_log", config.admin.audit_log]);
  }
  const problems: string[] = [];
  for (const [key, path] of files) {
    try {
      // Startup creates the log file's folder (0700); the access log's must exist.
      if (key === "log.file.path") {
        Deno.mkdirSync(path.slice(0, Math.max(path.lastIndexOf("/"), 1)), {
          recursive: true,
          mode: 0o700,
        });
      }
      Deno.openSync(path, { append: true, create: true, mode: 0o600 }).close();
    } catch (err) {
      problems.push(`${key}: cannot write ${JSON.stringify(path)}: ${(err as Error).message}`);
    }
  }
  const rustLog = Deno.env.get("RUST_LOG");
  if (rustLog !== undefined && rustLog.trim() !== "") {
    try {
      parseRustLog(rustLog);
    } catch (err) {
      problems.push(`RUST_LOG: ${(err as Error).message}`);
    }
  }
  return problems;
}

/**
 * Applies the `log` settings of a reloaded configuration when they differ
 * from those in effect: the level and the log file (LogTape is configured
 * anew), and the access log (reopened with its new format and file; the old
 * one is flushed and closed). Returns whether all of it took effect, and
 * what did not: a level `RUST_LOG` overrides is listed as
 * `log.level (RUST_LOG overrides it)`, a log file that cannot be opened as
 * `log (cannot be applied: see the log)`.
 */
export async function applyLogConfig(
  current: Config,
  next: Config,
  sink: RequestSink,
): Promise<{ applied: boolean; notes: string[] }> {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const notes: string[] = [];
  const log = getLogger(["proxy"]);
  const rustLog = Deno.env.get("RUST_LOG");
  const levelChanged = current.log.level !== next.log.level;
  if (levelChanged || !same(current.log.file, next.log.file)) {
    try {
      await setupLogging({
        service: PRODUCT,
        level: next.log.level,
        file: next.log.file,
        rustLog,
      });
      log.info("logging reconfigured: level {level}{file}", {
        level: next.log.level,
        file: next.log.file.enabled ? `, file ${next.log.file.path}` : "",
      });
    } catch (err) {
      log.error("log settings not applied: {error}", { error: (err as Error).message });
      notes.push("log (cannot be applied: see the log)");
    }
    if (levelChanged && rustLog !== undefined && rustLog.trim() !== "") {
      notes.push("log.level (RUST_LOG overrides it)");
    }
  }
  if (levelChanged || !same(current.log, next.log)) {
    try {
      sink.setAccessLog(openAccessLog(next));
    } catch (err) {
      log.error("access log not reopened: {error}", { error: (err as Error).message });
      notes.push("log.access (cannot be applied: see the log)");
    }
  }
  return { applied: !notes.some((n) => n.includes("cannot be applied")), notes };
}

/**
 * The access log of `log.access`: its own file, else the log file, else
 * stderr; off when disabled or when its level (info, category
 * `proxy::access`) is filtered out by `log.level` or `RUST_LOG`.
 */
export function openAccessLog(config: Config): AccessLog | undefined {
  const conf = config.log.access;
  if (!conf.enabled || !getLogger(["proxy", "access"]).isEnabledFor("info")) return undefined;
  const encoder = new TextEncoder();
  let out: { writeSync(p: Uint8Array): number } = Deno.stderr;
  const path = conf.file ??
    (config.log.file.enabled ? resolveLogFilePath(PRODUCT, config.log.file.path) : undefined);
  let file: Deno.FsFile | undefined;
  if (path !== undefined) {
    out = file = Deno.openSync(path, { append: true, create: true, mode: 0o600 });
  }
  return createAccessLog({
    format: conf.format,
    onClose: () => file?.close(),
    write(text) {
      const bytes = encoder.encode(text);
      let off = 0;
      while (off < bytes.length) off += out.writeSync(bytes.subarray(off));
    },
  });
}
