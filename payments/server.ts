/**
 * Start the payments sandbox as an HTTP server (HTTP/1.1 and h2c on plain
 * TCP, HTTP/2 over TLS with a certificate) backed by Deno KV, with a cap on
 * open connections and header and idle timeouts (`serve_connections.ts`).
 * Here the store and the service are built ({@link createPaymentsService})
 * and handed to the app (`app.ts`).
 *
 * @example
 * ```ts
 * const srv = await startPaymentsServer({ port: 0, kv: await Deno.openKv(":memory:"), tokens: ["t"] });
 * console.log(srv.url);
 * await srv.shutdown();
 * ```
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { settledWithin } from "../shared/deadline.ts";
import { basePathsOf, createApp } from "./app.ts";
import { PaymentsError } from "./domain/errors.ts";
import { createIdGenerator, type IdGenerator } from "./domain/ids.ts";
import { INTUIT_TID } from "./middleware.ts";
import { PaymentsService } from "./service.ts";
import { PaymentsStore } from "./store/kv_store.ts";
import {
  type ConnectionLimits,
  type ConnectionServer,
  perConnectionServeAvailable,
  serveConnections,
} from "../shared/serve_connections.ts";

const log = getLogger(["payments", "server"]);

/** Most checks a KV Connect server (denokv, Deno Deploy) accepts in one atomic commit. */
export const KV_CONNECT_MAX_CHECKS = 10;

/** What {@link createPaymentsService} builds the service over. */
export interface PaymentsServiceOptions {
  /** An open Deno KV handle (the caller closes it). */
  kv: Deno.Kv;
  /**
   * Most versionstamp checks in one commit: 100 for the embedded store
   * (default), {@link KV_CONNECT_MAX_CHECKS} for a KV Connect server.
   */
  maxChecksPerCommit?: number;
  /** How long a commit waits for a database locked by another process; default 5 s. */
  lockedWaitMs?: number;
  /** Longest wait for one store call before answering 503; default 10 s. */
  storeDeadlineMs?: number;
  /** Clock; default `() => new Date()`. */
  now?: () => Date;
  /** Id generator; default time-ordered random ids. */
  ids?: IdGenerator;
  /** Random bytes source; default `crypto.getRandomValues`. */
  random?: (b: Uint8Array) => void;
}

/**
 * The payments use cases over a store on `opts.kv`: what `createApp` serves.
 *
 * @example
 * ```ts
 * import { createApp } from "./app.ts";
 *
 * const kv = await Deno.openKv(":memory:");
 * const app = createApp({ service: createPaymentsService({ kv }), tokens: ["t"] });
 * ```
 */
export function createPaymentsService(opts: PaymentsServiceOptions): PaymentsService {
  const random = opts.random ?? ((b: Uint8Array) => void crypto.getRandomValues(b));
  const now = opts.now ?? (() => new Date());
  return new PaymentsService({
    store: new PaymentsStore(opts.kv, {
      maxChecksPerCommit: opts.maxChecksPerCommit,
      lockedWaitMs: opts.lockedWaitMs,
      deadlineMs: opts.storeDeadlineMs,
    }),
    now,
    ids: opts.ids ?? createIdGenerator(() => now().getTime(), random),
    random,
  });
}

/** Options of {@link startPaymentsServer}. */
export interface PaymentsServerOptions {
  /** Interface to bind; default `127.0.0.1`. */
  hostname?: string;
  /** Port; `0` picks a free one. Default 8081. */
  port?: number;
  /**
   * The store: an open Deno KV handle, or a function opening one (main.ts
   * passes an opener for a file path, `:memory:` or a KV Connect URL).
   */
  kv: Deno.Kv | (() => Promise<Deno.Kv>);
  /** Most checks per commit (see {@link PaymentsServiceOptions}); 10 for a KV Connect store. */
  maxChecksPerCommit?: number;
  /**
   * Longest wait for one store call before answering 503 (see
   * {@link PaymentsServiceOptions}); default 10 s.
   */
  storeDeadlineMs?: number;
  /** How long a request body may take to arrive before 408 (see `PaymentsDeps`); default 30 s. */
  bodyTimeoutMs?: number;
  /**
   * How long {@link PaymentsServer.shutdown} waits for requests in flight
   * before it closes the store anyway; default 10 s.
   */
  drainTimeoutMs?: number;
  /** Close the KV handle on shutdown; default true. */
  closeKv?: boolean;
  /** Base paths served besides the defaults (`/quickbooks/v4`, `/vendor/v4`). */
  basePaths?: string[];
  /** `infoLink` of every error (see `PaymentsDeps.infoLink`). */
  infoLink?: string;
  /** Origins allowed on the token endpoint (see `PaymentsDeps.corsOrigins`); default any. */
  corsOrigins?: string[];
  /** CIDRs of trusted proxies for the token rate limit (see `PaymentsDeps.trustedProxies`). */
  trustedProxies?: string[];
  /** Bearer tokens; when empty one is generated (see `generatedToken`). */
  tokens?: string[];
  /** PEM certificate (contents) for TLS. */
  cert?: string;
  /** PEM private key (contents) for TLS. */
  key?: string;
  /** Clock, for tests. */
  now?: () => Date;
  /**
   * Most connections open at once, header timeout and idle timeout (see
   * `ConnectionLimits`); each missing one takes its default (4,096, 10 s,
   * 60 s).
   */
  limits?: Partial<ConnectionLimits>;
}

/** A running server. */
export interface PaymentsServer {
  /** Bound port. */
  port: number;
  /** Bound hostname. */
  hostname: string;
  /** Base URL, e.g. `http://127.0.0.1:8081`. */
  url: string;
  /** Accepted tokens. */
  tokens: string[];
  /** The first accepted token. */
  token: string;
  /** True when the token was generated at start. */
  generatedToken: boolean;
  /** Base paths served. */
  basePaths: string[];
  /** The connection limits in force; undefined on a Deno that cannot enforce them (then a warning is logged). */
  limits?: Readonly<ConnectionLimits>;
  /**
   * Stop accepting, finish in-flight requests (waiting at most
   * `drainTimeoutMs`), close the KV store (unless `closeKv: false`).
   */
  shutdown(): Promise<void>;
}

/** A fresh random bearer token (base64url, 32 bytes). */
export function generateToken(): string {
  const b = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Start the server; resolves once it listens. */
export async function startPaymentsServer(
  opts: PaymentsServerOptions,
): Promise<PaymentsServer> {
  const tokens = (opts.tokens ?? []).filter((t) => t !== "");
  const generatedToken = tokens.length === 0;
  if (generatedToken) tokens.push(generateToken());
  const basePaths = basePathsOf(opts.basePaths);
  const kv = typeof opts.kv === "function" ? await opts.kv() : opts.kv;
  const closeKv = opts.closeKv ?? true;
  const app = createApp({
    service: createPaymentsService({
      kv,
      now: opts.now,
      maxChecksPerCommit: opts.maxChecksPerCommit,
      storeDeadlineMs: opts.storeDeadlineMs,
    }),
    tokens,
    basePaths,
    now: opts.now,
    bodyTimeoutMs: opts.bodyTimeoutMs,
    infoLink: opts.infoLink,
    corsOrigins: opts.corsOrigins,
    trustedProxies: opts.trustedProxies,
  });
  let server: Listening;
  try {
    server = await listen(opts, app.fetch);
  } catch (err) {
    if (closeKv) kv.close();
    throw err;
  }
  return new RunningPaymentsServer(server, {
    tls: Boolean(opts.cert && opts.key),
    tokens,
    generatedToken,
    basePaths,
    drainTimeoutMs: opts.drainTimeoutMs ?? 10_000,
    closeStore: closeKv ? () => kv.close() : () => {},
  });
}

/** What serves: our connection-limited server, or `Deno.serve` on a Deno without it. */
type Listening = ConnectionServer | Deno.HttpServer<Deno.NetAddr>;

/** Binds and serves `handler`; resolves once it listens. */
async function listen(
  opts: PaymentsServerOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Promise<Listening> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const port = opts.port ?? 8081;
  const onError = failedRequest(opts.infoLink);
  const tls = opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : undefined;
  if (perConnectionServeAvailable()) {
    const listener = tls
      ? Deno.listenTls({ hostname, port, ...tls, alpnProtocols: ["h2", "http/1.1"] })
      : Deno.listen({ hostname, port });
    try {
      return serveConnections(listener, handler, { limits: opts.limits, onError });
    } catch (err) {
      listener.close();
      throw err;
    }
  }
  // A Deno without the per-connection server: serve as before, unguarded.
  log.warn(
    "this Deno cannot enforce --max-connections, --header-timeout or --idle-timeout; " +
      "serving without them (use Deno 2.9)",
  );
  const listening = Promise.withResolvers<void>();
  const common = { hostname, port, onListen: () => listening.resolve(), onError };
  const server = tls ? Deno.serve({ ...common, ...tls }, handler) : Deno.serve(common, handler);
  await listening.promise;
  return server;
}

/** The answer to a request whose handler threw: the error envelope, status 500. */
function failedRequest(infoLink: string | undefined): (err: unknown) => Response {
  return (err) => {
    log.error("request failed: {error}", { error: err });
    const failure = PaymentsError.system("internal error", 500, false);
    return new Response(
      JSON.stringify(failure.toEnvelope(infoLink)),
      {
        status: failure.status,
        headers: { "content-type": "application/json", [INTUIT_TID]: crypto.randomUUID() },
      },
    );
  };
}

/** A running server: what it serves, and its shutdown. */
class RunningPaymentsServer implements PaymentsServer {
  readonly port: number;
  readonly hostname: string;
  readonly url: string;
  readonly tokens: string[];
  readonly token: string;
  readonly generatedToken: boolean;
  readonly basePaths: string[];
  readonly limits?: Readonly<ConnectionLimits>;
  readonly #server: Listening;
  readonly #drainTimeoutMs: number;
  readonly #closeStore: () => void;
  #closed: Promise<void> | undefined;

  constructor(
    server: Listening,
    opts: Pick<PaymentsServer, "tokens" | "generatedToken" | "basePaths"> & {
      tls: boolean;
      drainTimeoutMs: number;
      closeStore: () => void;
    },
  ) {
    const addr = server.addr;
    const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
    this.port = addr.port;
    this.hostname = addr.hostname;
    this.url = `${opts.tls ? "https" : "http"}://${host}:${addr.port}`;
    this.tokens = opts.tokens;
    this.token = opts.tokens[0];
    this.generatedToken = opts.generatedToken;
    this.basePaths = opts.basePaths;
    this.limits = "limits" in server ? server.limits : undefined;
    this.#server = server;
    this.#drainTimeoutMs = opts.drainTimeoutMs;
    this.#closeStore = opts.closeStore;
  }

  shutdown(): Promise<void> {
    this.#closed ??= this.#drain();
    return this.#closed;
  }

  async #drain(): Promise<void> {
    const server = this.#server;
    const shut = server.shutdown();
    if (await settledWithin(shut, this.#drainTimeoutMs)) {
      await shut; // rethrows its error, if any, as before
    } else {
      log.warn("requests still open after {ms} ms of draining; closing anyway", {
        ms: this.#drainTimeoutMs,
      });
      if ("close" in server) server.close();
    }
    this.#closeStore();
  }
}
