/**
 * Reloading the configuration file (SIGHUP, `POST /admin/reload`): read and
 * validate it again (the key, token and client certificate files it names
 * included: keys rotate with a reload), then apply it in an order that either changes
 * everything it can or nothing. A file that does not load, log files that
 * cannot be written, or a certificate and key the listeners refuse reject
 * the reload before anything changes; the previous configuration keeps
 * serving. Otherwise the certificate (both listeners or neither), then the
 * runtime (routes, pools, health checks, …), then the `log` settings.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { ReloadOutcome } from "./admin/admin.ts";
import { serialRuns } from "./admin/serial.ts";
import { formatProblem, type LoadResult, type TlsPem } from "./config/mod.ts";
import type { Config } from "./config/schema.ts";
import { applyLogConfig, checkLogFiles } from "./log_config.ts";
import type { RequestSink } from "./request_log.ts";
import type { ProxyRuntime } from "./runtime.ts";

const log = getLogger(["proxy"]);

/** A listener whose certificate a reload renews. */
export interface CertificateHolder {
  /** Serves new connections with another pair (PEM); throws, changing nothing, for an unusable one. */
  setCertificate(cert: string, key: string): void;
}

/** What a {@link ConfigReloader} works on. */
export interface ReloaderOptions {
  /**
   * Reads and validates the configuration file (every file read off the
   * event loop, bounded, regular files only: a FIFO or a device in place of
   * a file rejects the reload, never hangs it).
   */
  load(): Promise<LoadResult>;
  /** The runtime a valid configuration is swapped into. */
  runtime: ProxyRuntime;
  /** Where finished requests are logged: its access log follows `log.access`. */
  sink: RequestSink;
  /** The HTTP/3 listener. */
  quic: CertificateHolder;
  /** The TCP fallback, when there is one. */
  fallback?: CertificateHolder;
  /** The pair both listeners serve now. */
  served: TlsPem;
  /** The configuration whose `log` settings are in effect. */
  config: Config;
}

/**
 * Reloads the configuration file, one reload at a time: one asked for
 * during a reload gets its own, which reads the file after it was asked for
 * (a change written meanwhile is not lost).
 *
 * @example
 * ```ts
 * declare const options: ReloaderOptions;
 * const reloader = new ConfigReloader(options);
 * const outcome = await reloader.reload();
 * if (!outcome.ok) console.error(outcome.errors);
 * ```
 */
export class ConfigReloader {
  readonly #opts: ReloaderOptions;
  readonly #serial: () => Promise<ReloadOutcome>;
  /** The pair the listeners serve. */
  #served: TlsPem;
  /** The configuration whose `log` settings are in effect. */
  #logged: Config;

  /** A reloader of the configuration `opts.config`, served with `opts.served`. */
  constructor(opts: ReloaderOptions) {
    this.#opts = opts;
    this.#served = opts.served;
    this.#logged = opts.config;
    this.#serial = serialRuns(() => this.#reloadOnce());
  }

  /** Reloads now, or after the reload under way; says what was applied or why nothing was. */
  reload(): Promise<ReloadOutcome> {
    return this.#serial();
  }

  async #reloadOnce(): Promise<ReloadOutcome> {
    const loaded = await this.#opts.load();
    if (!loaded.ok) {
      return rejected(
        loaded.kind === "load" ? [loaded.message] : loaded.problems.map((p) => formatProblem(p)),
      );
    }
    for (const w of loaded.warnings) {
      log.warn("reload: {warning}", { warning: formatProblem(w) });
    }
    // Log files that cannot be written (or a bad RUST_LOG) stop startup, so
    // they reject a reload too, before anything changes.
    const logProblems = checkLogFiles(loaded.config);
    if (logProblems.length > 0) return rejected(logProblems);
    // The certificate first: a pair that cannot be used rejects the whole
    // reload, before anything else changes.
    let renewed: boolean;
    try {
      renewed = this.#renewCertificate(loaded.pem!);
    } catch (err) {
      return rejected([
        `listen.tls: the certificate and key cannot be used: ${(err as Error).message}`,
      ]);
    }
    // With the keys, tokens and client certificates read from their files again.
    const restartRequired = await this.#opts.runtime.reload(loaded.config, loaded.secrets);
    restartRequired.push(...await this.#applyLog(loaded.config));
    if (renewed) {
      log.info("new {which} connections get the certificate from {path}", {
        which: this.#opts.fallback ? "HTTP/3 and TCP fallback" : "HTTP/3",
        path: loaded.config.listen.tls.cert,
      });
    }
    return { ok: true, restartRequired };
  }

  /**
   * Serves `next` on both listeners or neither: the TCP fallback first (it
   * changes nothing when it throws), then HTTP/3. False when the pair is
   * the one served.
   */
  #renewCertificate(next: TlsPem): boolean {
    const served = this.#served;
    if (next.cert === served.cert && next.key === served.key) return false;
    const { quic, fallback } = this.#opts;
    fallback?.setCertificate(next.cert, next.key);
    try {
      quic.setCertificate(next.cert, next.key);
    } catch (err) {
      fallback?.setCertificate(served.cert, served.key);
      throw err;
    }
    this.#served = next;
    return true;
  }

  /**
   * Logging as the new file says: level, log file, access log. What could
   * not be applied is tried again at the next reload; returns the notes for
   * `restart_required`.
   */
  async #applyLog(next: Config): Promise<string[]> {
    const change = await applyLogConfig(this.#logged, next, this.#opts.sink);
    if (change.applied) this.#logged = next;
    return change.notes;
  }
}

/** A rejected reload: each error logged, then that the previous configuration keeps serving. */
function rejected(errors: string[]): ReloadOutcome {
  for (const error of errors) log.error("reload rejected: {error}", { error });
  log.error("configuration reload failed; the previous configuration keeps serving");
  return { ok: false, errors };
}
