/**
 * The signals the proxy answers: SIGINT and SIGTERM ask for a graceful
 * shutdown, SIGHUP for a reload of the configuration file.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";

const log = getLogger(["proxy"]);

/** The shutdown signals. */
const STOP_SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGTERM"];

/**
 * The process's signal handlers. A stop is asked for once (by a signal, or
 * by {@link requestStop}); a signal after that is logged and otherwise
 * ignored, and keeps being handled during the drain: a second signal (Ctrl-C
 * reaches every process of the terminal's group, and a supervisor may add
 * SIGTERM) must not kill the proxy mid-drain, which would lose
 * "Shutdown complete".
 *
 * @example
 * ```ts
 * declare function reload(): void;
 * const signals = new ProcessSignals(reload);
 * signals.listen();
 * const reason = await signals.stopRequested; // "SIGTERM"
 * signals.stopReloading();
 * // … drain …
 * signals.close();
 * ```
 */
export class ProcessSignals {
  readonly #stop = Promise.withResolvers<string>();
  readonly #onStop = new Map<Deno.Signal, () => void>();
  readonly #onHup: () => void;
  #stopping = false;
  #reloading = false;

  /** Handlers that call `reload` on SIGHUP; nothing is listened to before {@link listen}. */
  constructor(reload: () => void) {
    this.#onHup = () => reload();
    for (const s of STOP_SIGNALS) {
      this.#onStop.set(s, () => {
        if (this.#stopping) log.info("{signal}: shutdown already under way", { signal: s });
        this.#stopping = true;
        this.#stop.resolve(s);
      });
    }
    this.#stop.promise.then(() => this.#stopping = true);
  }

  /** Resolves with the reason of the first stop asked for (a signal's name, or another reason). */
  get stopRequested(): Promise<string> {
    return this.#stop.promise;
  }

  /** Asks for a stop (e.g. `admin drain`), as a signal would. */
  requestStop(reason: string): void {
    this.#stop.resolve(reason);
  }

  /** Starts handling SIGINT, SIGTERM and SIGHUP. */
  listen(): void {
    for (const [s, handler] of this.#onStop) Deno.addSignalListener(s, handler);
    Deno.addSignalListener("SIGHUP", this.#onHup);
    this.#reloading = true;
  }

  /** Stops handling SIGHUP (no reload during the drain). */
  stopReloading(): void {
    if (!this.#reloading) return;
    this.#reloading = false;
    Deno.removeSignalListener("SIGHUP", this.#onHup);
  }

  /** Stops handling every signal. */
  close(): void {
    this.stopReloading();
    for (const [s, handler] of this.#onStop) Deno.removeSignalListener(s, handler);
  }
}
