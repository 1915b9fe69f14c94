/**
 * `spooky`: the HTTP/3 → HTTP/2 edge proxy. Composition root and CLI: the only
 * proxy module that reads `Deno.args` and the environment.
 *
 *     deno run -A proxy/main.ts -c config.yaml
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { getLogger } from "@logtape/logtape";
import { setupLogging, teardownLogging } from "../shared/logging.ts";
import { PRODUCT, USER_AGENT, VERSION } from "../shared/version.ts";
import { settledWithin } from "../shared/deadline.ts";
import type { ConnectionServer, TlsConnectionServer } from "../shared/serve_connections.ts";
import { type Config, isLoopbackAddress } from "./config/schema.ts";
import type { AdminDeps } from "./admin/admin.ts";
import { adminAccessFollowing } from "./admin/access.ts";
import { AuditLog } from "./admin/audit.ts";
import { type ConfigSecrets, NO_SECRETS } from "./config/secrets.ts";
import { ProxyLifecycle, readiness } from "./admin/ready.ts";
import {
  type BackendNameWarning,
  formatProblem,
  loadConfig,
  type LoadResult,
  type TlsPairProblem,
  type TlsPem,
} from "./config/mod.ts";
import {
  type DenoQuicTransport,
  listenQuic,
  type ListenQuicOptions,
  quicEndpointWithTcpTwin,
} from "./quic/deno_transport.ts";
import { readUdpStats } from "./quic/udp_stats.ts";
import { QuicReceiveBuffer } from "./quic/receive_buffer.ts";
import { ProxyRuntime } from "./runtime.ts";
import { ConfigReloader } from "./reload.ts";
import { ProcessSignals } from "./signals.ts";
import { checkLogFiles, openAccessLog } from "./log_config.ts";
import { H3Server, type H3ServerOptions } from "./server/server.ts";
import { tcpFallbackHandler } from "./server/tcp_fallback.ts";
import { tcpWebSocketTakeOver } from "./server/tcp_websocket.ts";
import {
  fallbackMaxConnections,
  ListenerStartError,
  listenerStartError,
  readProcessLimits,
  startAdminListener,
  startTcpFallback,
} from "./server/tcp_listeners.ts";
import { createDispatchTransport } from "./upstream/dispatch_transport.ts";
import { BackendResolver } from "./dns/backend_resolver.ts";
import { systemDnsLookup } from "./dns/lookup.ts";
import { ResolvingTransport } from "./dns/resolving_transport.ts";
import { createRequestSink, type RequestSink } from "./request_log.ts";

const HELP = `${PRODUCT} ${VERSION}: HTTP/3 edge proxy forwarding to HTTP/2 backends

Usage: deno run -A proxy/main.ts -c <config.yaml>

Options:
  -c, --config <path>  configuration file (YAML), required
  -t, --check          validate the configuration (schema, certificate and key
                       as a pair, log files) and exit: 0 valid, 1 not;
                       --validate is the same
  -V, --version        print the version and exit
  -h, --help           print this help and exit

Signals:
  SIGINT, SIGTERM      graceful shutdown (GOAWAY, drain, exit 0)
  SIGHUP               reload the configuration file (kept if invalid)

Environment:
  RUST_LOG             overrides log.level: a level, or module=level pairs
                       separated by commas (e.g. info,proxy::health=trace)
`;

/** Streams a client's QPACK dynamic-table references may block (when it has a table). */
const QPACK_BLOCKED_STREAMS = 16;

/**
 * Loads the certificate and key the way the HTTP/3 listener does (one
 * `listen()` on a throwaway loopback endpoint, which rustls checks exactly as
 * it will check the real one), so that a pair that cannot serve is a
 * configuration problem reported before `Configuration validation successful`,
 * at startup and on reload alike.
 */
function checkTlsPair(pem: TlsPem): Promise<TlsPairProblem | null> {
  let endpoint: Deno.QuicEndpoint;
  try {
    endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  } catch {
    return Promise.resolve(null); // no loopback socket: the listener itself will tell
  }
  try {
    endpoint.listen({ cert: pem.cert, key: pem.key, alpnProtocols: ["h3"] });
    return Promise.resolve(null);
  } catch (err) {
    return Promise.resolve(describePairError((err as Error).message));
  } finally {
    endpoint.close();
  }
}

/** Maps the TLS stack's complaint about a certificate and key to the key to blame. */
function describePairError(message: string): TlsPairProblem {
  const text = message.split("\n", 1)[0];
  if (/KeyMismatch|keys may not be consistent/i.test(text)) {
    return { at: "key", message: "does not match listen.tls.cert" };
  }
  if (/private key/i.test(text)) return { at: "key", message: `cannot be used: ${text}` };
  return { at: "cert", message: `cannot be used with listen.tls.key: ${text}` };
}

function parseCli(
  args: string[],
): { config?: string; version: boolean; help: boolean; check: boolean } {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: "string", short: "c" },
      version: { type: "boolean", short: "V", default: false },
      help: { type: "boolean", short: "h", default: false },
      check: { type: "boolean", short: "t", default: false },
      validate: { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  return {
    config: values.config,
    version: values.version!,
    help: values.help!,
    check: values.check! || values.validate!,
  };
}

async function main(args: string[]): Promise<number> {
  let cli;
  try {
    cli = parseCli(args);
  } catch (err) {
    console.error(`Error: ${(err as Error).message}\n\n${HELP}`);
    return 1;
  }
  if (cli.help) {
    console.log(HELP);
    return 0;
  }
  if (cli.version) {
    console.log(`${PRODUCT} ${VERSION}`);
    return 0;
  }
  if (!cli.config) {
    console.error(`Error: the option -c/--config <path> is required\n\n${HELP}`);
    return 1;
  }
  // Backends configured by name are looked up while the file is validated:
  // a name that does not resolve is a warning, and its first answer is kept.
  const resolver = new BackendResolver({ lookup: systemDnsLookup() });
  const loaded = await loadValid(cli.config, cli.check, resolver);
  if (loaded === undefined || cli.check) resolver.stop();
  if (loaded === undefined) return 1;
  if (cli.check) return checkOnly(loaded.config, cli.config);
  console.log("Configuration validation successful");
  return await start(loaded.config, cli.config, loaded.pem!, resolver, loaded.secrets);
}

/** The names of `config` looked up by `resolver`; each that does not resolve, a warning per backend. */
async function backendNameWarnings(
  resolver: BackendResolver,
  config: Config,
): Promise<BackendNameWarning[]> {
  const failures = await resolver.update(config);
  return failures.flatMap((f) =>
    f.paths.map((path) => ({
      path,
      message: `${f.message} (looked up again every dns_refresh_ms; the proxy starts anyway)`,
    }))
  );
}

/**
 * Loads and validates the configuration file, printing its warnings, or
 * every problem and that validation failed (undefined).
 */
async function loadValid(
  path: string,
  check: boolean,
  resolver: BackendResolver,
): Promise<Extract<LoadResult, { ok: true }> | undefined> {
  const loaded = await loadConfig(path, {
    checkTlsPair,
    checkBackendNames: (config) => backendNameWarnings(resolver, config),
  });
  if (!loaded.ok) {
    if (loaded.kind === "load") {
      console.error(`Error loading config: ${loaded.message}`);
    } else {
      for (const p of loaded.problems) console.error(formatProblem(p));
      console.error(
        check ? "Configuration validation failed." : "Configuration validation failed. Exiting...",
      );
    }
    return undefined;
  }
  for (const w of loaded.warnings) console.error(`Warning: ${formatProblem(w)}`);
  return loaded;
}

/** `--check` on a valid file: what startup would open next, the log file and the access-log file. */
function checkOnly(config: Config, path: string): number {
  const problems = checkLogFiles(config);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error("Configuration validation failed.");
    return 1;
  }
  console.log(`Configuration validation successful: ${path}`);
  return 0;
}

/** Sets logging up and runs the proxy until it has drained; 1 when it cannot start. */
async function start(
  config: Config,
  configPath: string,
  pem: TlsPem,
  resolver: BackendResolver,
  secrets: ConfigSecrets = NO_SECRETS,
): Promise<number> {
  try {
    await setupLogging({
      service: PRODUCT,
      level: config.log.level,
      file: config.log.file,
      rustLog: Deno.env.get("RUST_LOG"),
    });
  } catch (err) {
    console.error(`Error loading config: ${(err as Error).message}`);
    return 1;
  }
  console.log(`${PRODUCT[0].toUpperCase()}${PRODUCT.slice(1)} is starting`);
  try {
    return await run(config, configPath, pem, resolver, secrets);
  } catch (err) {
    // A listener that cannot start is one line naming it, its address and keys.
    if (!(err instanceof ListenerStartError)) {
      getLogger(["proxy"]).error("fatal: {error}", { error: String(err) });
    }
    console.error(`Error: ${(err as Error).message}`);
    await teardownLogging();
    return 1;
  }
}

/** What a running proxy stops, in order, when it drains. */
interface Running {
  runtime: ProxyRuntime;
  sink: RequestSink;
  probeClient: Deno.HttpClient;
  http3: Http3Listener;
  fallback?: TlsConnectionServer;
  admin?: ConnectionServer;
  /** Listening, draining: what `/ready` reads. */
  lifecycle: ProxyLifecycle;
}

async function run(
  config: Config,
  configPath: string,
  pem: TlsPem,
  resolver: BackendResolver,
  secrets: ConfigSecrets,
): Promise<number> {
  // The loader read and checked these (regular files only, bounded, as a
  // pair the listener accepts) from paths resolved against the config's folder.
  getLogger(["proxy"]).info("certificate loaded from {path}", { path: config.listen.tls.cert });

  const probeClient = Deno.createHttpClient({ http1: false, http2: true, allowHost: true });
  const runtime = new ProxyRuntime(config, {
    userAgent: USER_AGENT,
    // Backends configured by name go to the addresses `resolver` keeps.
    transport: new ResolvingTransport(createDispatchTransport(), resolver),
    probeFetch: (url, init) => fetch(url, { ...init, client: init.client ?? probeClient }),
    resolver,
  }, secrets);
  const lifecycle = new ProxyLifecycle();
  // Every finished request, on every listener, is counted and logged here once.
  const sink = createRequestSink(runtime.metrics, openAccessLog(config));
  runtime.start();

  const http3 = startHttp3(config, pem, runtime, sink);
  const fallback = config.listen.tcp_fallback
    ? startFallback(config, pem, http3.port, runtime, sink)
    : undefined;
  const reloader = new ConfigReloader({
    load: () => loadConfig(configPath, { checkTlsPair }),
    runtime,
    sink,
    quic: http3.transport,
    fallback,
    served: pem,
    config,
  });
  const signals = new ProcessSignals(() => void reloader.reload());
  const admin = config.admin
    ? await startAdmin(config.admin, {
      runtime,
      connections: () => http3.server.connections(),
      reload: () => reloader.reload(),
      drain: () => signals.requestStop("admin drain"),
      version: VERSION,
      token: config.admin.token,
      // Tokens, roles and `allow` as the configuration served now says (reloads apply).
      access: adminAccessFollowing(() => ({
        admin: runtime.config.admin,
        tokens: runtime.secrets.adminTokens,
      })),
      audit: config.admin.audit_log === undefined
        ? undefined
        : AuditLog.open(config.admin.audit_log),
      readiness: () => readiness(runtime, lifecycle),
    }, runtime.metrics)
    : undefined;

  // Signals are handled before the line that tells a supervisor (or a test)
  // the proxy is up: a SIGTERM right after it drains rather than kills.
  signals.listen();
  console.log(`Listening on ${config.listen.address}:${http3.port}`);
  lifecycle.markListening();
  const reason = await signals.stopRequested;
  signals.stopReloading();
  await drain({ runtime, sink, probeClient, http3, fallback, admin, lifecycle }, reason);
  signals.close();
  return 0;
}

/** The HTTP/3 listener: the QUIC transport, the HTTP/3 server on it, its socket's buffer. */
interface Http3Listener {
  transport: DenoQuicTransport;
  server: H3Server;
  receiveBuffer: QuicReceiveBuffer;
  /** The bound port (the TCP fallback serves the same). */
  port: number;
}

/** Binds the QUIC socket and serves HTTP/3 on it with the runtime's handler. */
function startHttp3(
  config: Config,
  pem: TlsPem,
  runtime: ProxyRuntime,
  sink: RequestSink,
): Http3Listener {
  const metrics = runtime.metrics;
  // The QUIC socket's receive buffer, raised once the socket is bound (below).
  const receiveBuffer = new QuicReceiveBuffer({
    wanted: config.limits.udp_receive_buffer,
    loopbackOnly: isLoopbackAddress(config.listen.address),
  });
  const transport = bindNamed(
    "HTTP/3 listener",
    config.listen.address,
    config.listen.port,
    "listen.address, listen.port",
  )(() =>
    listenQuic({
      ...quicOptions(config, pem, (reason) => {
        metrics.recordRejected(reason);
        receiveBuffer.rejected(reason);
      }),
      // Port 0 with the TCP fallback: a port free for both protocols.
      endpoint: config.listen.port === 0 && config.listen.tcp_fallback
        ? quicEndpointWithTcpTwin(config.listen.address)
        : undefined,
    })
  );
  // Deno's QUIC API cannot size its socket's receive buffer: raised through FFI.
  receiveBuffer.raise(transport.addr.port);
  metrics.quicSocket = () => ({
    handshakes: transport.handshakes,
    receiveBufferBytes: receiveBuffer.bytes,
    memorySteps: transport.memorySteps,
    ...readUdpStats(transport.addr.port),
  });
  const server = new H3Server(transport, h3ServerOptions(config, runtime, sink));
  server.start();
  return { transport, server, receiveBuffer, port: transport.addr.port };
}

/** The QUIC listener's options: address, certificate, streams, admission limits. */
function quicOptions(
  config: Config,
  pem: TlsPem,
  onRejected: ListenQuicOptions["onRejected"],
): ListenQuicOptions {
  const l = config.limits;
  return {
    hostname: config.listen.address,
    port: config.listen.port,
    cert: pem.cert,
    key: pem.key,
    maxStreams: config.listen.max_streams,
    idleTimeoutMs: config.listen.idle_timeout_ms,
    limits: {
      handshakeTimeoutMs: l.handshake_timeout_ms,
      maxHandshakes: l.max_handshakes,
      maxConnections: l.max_connections,
      maxPerAddress: l.max_connections_per_address,
      maxHandshakesPerAddress: l.max_handshakes_per_address,
      maxHandshakesPerNetwork: l.max_handshakes_per_network,
      maxHandshakeRate: l.max_handshake_rate,
      addressPrefix: { v4: l.address_prefix_v4, v6: l.address_prefix_v6 },
      networkPrefix: { v4: l.network_prefix_v4, v6: l.network_prefix_v6 },
    },
    onRejected,
  };
}

/** The HTTP/3 server's options: the runtime's handler, the limits, the metrics hooks. */
function h3ServerOptions(
  config: Config,
  runtime: ProxyRuntime,
  sink: RequestSink,
): H3ServerOptions {
  const metrics = runtime.metrics;
  return {
    handler: runtime.handler,
    maxFieldSectionSize: config.limits.max_header_list_size,
    maxRequestBodyBytes: config.limits.max_request_body_bytes,
    requestIdleTimeoutMs: config.limits.request_idle_timeout_ms,
    maxBackendStreamsPerConnection: config.limits.max_backend_streams_per_connection,
    qpackMaxTableCapacity: config.limits.qpack_max_table_capacity,
    qpackBlockedStreams: config.limits.qpack_max_table_capacity > 0 ? QPACK_BLOCKED_STREAMS : 0,
    hooks: {
      streamOpened: () => metrics.activeStreams++,
      streamClosed: () => metrics.activeStreams--,
      qpackDynamicSection: () => metrics.qpackDynamicSections++,
      requestDone: sink.finished,
    },
    onConnectionOpened: () => metrics.activeConnections++,
    onConnectionClosed: () => metrics.activeConnections--,
    idleReclaim: config.limits.idle_reclaim_ms > 0
      ? {
        threshold: Math.ceil(0.9 * config.limits.max_connections),
        idleMs: config.limits.idle_reclaim_ms,
      }
      : undefined,
    onIdleReclaimed: () => metrics.recordRejected("idle_reclaim"),
  };
}

/** The TCP fallback (HTTP/2 and HTTP/1.1 over TLS) on the HTTP/3 port. */
function startFallback(
  config: Config,
  pem: TlsPem,
  port: number,
  runtime: ProxyRuntime,
  sink: RequestSink,
): TlsConnectionServer {
  const l = config.limits;
  const tcpFallback = startTcpFallback({
    hostname: config.listen.address,
    port,
    tls: { cert: pem.cert, key: pem.key },
    handler: tcpFallbackHandler(runtime.handler, port, {
      done: sink.finished,
      maxBackendStreamsPerConnection: l.max_backend_streams_per_connection,
      writeStallMs: l.request_idle_timeout_ms,
    }),
    // WebSockets over HTTP/1.1: the runtime's server cannot carry the upgrade.
    takeOver: tcpWebSocketTakeOver(runtime.handler, port, { done: sink.finished }),
    limits: {
      maxConnections: l.tcp_max_connections === "auto"
        ? fallbackMaxConnections(readProcessLimits(), config.admin?.max_connections ?? 0)
        : l.tcp_max_connections,
      headerTimeoutMs: l.tcp_header_timeout_ms,
      idleTimeoutMs: l.tcp_idle_timeout_ms,
    },
  });
  runtime.metrics.tcpListeners.set("tcp_fallback", () => tcpFallback.stats());
  getLogger(["proxy"]).info(
    "TCP fallback (HTTP/2, HTTP/1.1 over TLS) on {address}:{port}: at most {max} connections",
    { address: config.listen.address, port, max: tcpFallback.limits.maxConnections },
  );
  return tcpFallback;
}

/**
 * The admin listener. Its app is loaded only when the admin listener is
 * configured (Hono is not on the default start path).
 */
async function startAdmin(
  admin: NonNullable<Config["admin"]>,
  deps: AdminDeps,
  metrics: ProxyRuntime["metrics"],
): Promise<ConnectionServer> {
  const { createAdminApp } = await import("./admin/admin.ts");
  const app = createAdminApp(deps);
  const server = startAdminListener({
    hostname: admin.address,
    port: admin.port,
    handler: app.fetch,
    limits: {
      maxConnections: admin.max_connections,
      headerTimeoutMs: admin.header_timeout_ms,
      idleTimeoutMs: admin.idle_timeout_ms,
    },
  });
  metrics.tcpListeners.set("admin", () => server.stats());
  console.log(`Admin listening on ${admin.address}:${server.addr.port}`);
  return server;
}

/** Drains the listeners (bounded by `limits.drain_timeout_ms`) and stops everything. */
async function drain(running: Running, reason: string): Promise<void> {
  const log = getLogger(["proxy"]);
  const { runtime, http3, fallback, admin } = running;
  // `/ready` answers 503 from here on, while connections are still served.
  running.lifecycle.markDraining();
  log.info("Draining connections ({reason})", { reason });
  const drainMs = runtime.config.limits.drain_timeout_ms;
  const drains: Promise<unknown>[] = [http3.server.shutdown(drainMs)];
  // The fallback's shutdown waits for every handler; past the drain bound its
  // connections are closed, and the transport is closed below, which ends
  // whatever a handler still waits on.
  if (fallback) {
    drains.push(
      settledWithin(fallback.shutdown(), drainMs).then((done) => done || fallback.close()),
    );
  }
  await Promise.allSettled(drains);
  // Cancels every exchange still open with a backend.
  await runtime.stop();
  http3.receiveBuffer.stop();
  if (admin && !(await settledWithin(admin.shutdown(), 1000))) admin.close();
  running.probeClient.close();
  running.sink.close();
  log.info("Shutdown complete");
  await teardownLogging();
}

/**
 * Runs `bind`, turning its failure into one {@link ListenerStartError} that
 * names the listener, its address and the keys that set it.
 */
function bindNamed(
  listener: string,
  hostname: string,
  port: number,
  keys: string,
): <T>(bind: () => T) => T {
  return (bind) => {
    try {
      return bind();
    } catch (err) {
      throw listenerStartError(listener, hostname, port, keys, err);
    }
  };
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
