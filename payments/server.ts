/**
 * Start the payments sandbox as an HTTP server (HTTP/1.1 and h2c on plain
 * TCP, HTTP/2 over TLS with a certificate) backed by Deno KV, with a cap on
 * open connections and header and idle timeouts (`serve_connections.ts`).
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
import { basePathsOf, createApp, INTUIT_TID } from "./app.ts";
import { PaymentsError } from "./domain/errors.ts";
import {
  type ConnectionLimits,
  type ConnectionServer,
  perConnectionServeAvailable,
  serveConnections,
} from "../shared/serve_connections.ts";

const log = getLogger(["payments", "server"]);

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
  /** Most checks per commit (see `PaymentsDeps`); 10 for a KV Connect store. */
  maxChecksPerCommit?: number;
  /** Longest wait for one store call before answering 503 (see `PaymentsDeps`); default 10 s. */
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
    kv,
    tokens,
    basePaths,
    now: opts.now,
    maxChecksPerCommit: opts.maxChecksPerCommit,
    storeDeadlineMs: opts.storeDeadlineMs,
    bodyTimeoutMs: opts.bodyTimeoutMs,
    infoLink: opts.infoLink,
    corsOrigins: opts.corsOrigins,
    trustedProxies: opts.trustedProxies,
  });
  const hostname = opts.hostname ?? "127.0.0.1";
  const tls = Boolean(opts.cert && opts.key);
  const onError = (err: unknown) => {
    log.error("request failed: {error}", { error: err });
    const failure = PaymentsError.system("internal error", 500, false);
    return new Response(
      JSON.stringify(failure.toEnvelope(opts.infoLink)),
      {
        status: failure.status,
        headers: { "content-type": "application/json", [INTUIT_TID]: crypto.randomUUID() },
      },
    );
  };
  let server: ConnectionServer | Deno.HttpServer<Deno.NetAddr>;
  try {
    const port = opts.port ?? 8081;
    if (perConnectionServeAvailable()) {
      const listener = tls
        ? Deno.listenTls({
          hostname,
          port,
          cert: opts.cert!,
          key: opts.key!,
          alpnProtocols: ["h2", "http/1.1"],
        })
        : Deno.listen({ hostname, port });
      try {
        server = serveConnections(listener, app.fetch, { limits: opts.limits, onError });
      } catch (err) {
        listener.close();
        throw err;
      }
    } else {
      // A Deno without the per-connection server: serve as before, unguarded.
      log.warn(
        "this Deno cannot enforce --max-connections, --header-timeout or --idle-timeout; " +
          "serving without them (use Deno 2.9)",
      );
      const listening = Promise.withResolvers<void>();
      const common = { hostname, port, onListen: () => listening.resolve(), onError };
      server = tls
        ? Deno.serve({ ...common, cert: opts.cert!, key: opts.key! }, app.fetch)
        : Deno.serve(common, app.fetch);
      await listening.promise;
    }
  } catch (err) {
    if (closeKv) kv.close();
    throw err;
  }
  const addr = server.addr;
  const scheme = tls ? "https" : "http";
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closed: Promise<void> | undefined;
  return {
    port: addr.port,
    hostname: addr.hostname,
    url: `${scheme}://${host}:${addr.port}`,
    tokens,
    token: tokens[0],
    generatedToken,
    basePaths,
    limits: "limits" in server ? server.limits : undefined,
    shutdown() {
      closed ??= (async () => {
        const drainMs = opts.drainTimeoutMs ?? 10_000;
        const shut = server.shutdown();
        if (await settledWithin(shut, drainMs)) {
          await shut; // rethrows its error, if any, as before
        } else {
          log.warn("requests still open after {ms} ms of draining; closing anyway", {
            ms: drainMs,
          });
          if ("close" in server) server.close();
        }
        if (closeKv) kv.close();
      })();
      return closed;
    },
  };
}
