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
import {
  parseRustLog,
  resolveLogFilePath,
  setupLogging,
  teardownLogging,
} from "../shared/logging.ts";
import { PRODUCT, USER_AGENT, VERSION } from "../shared/version.ts";
import { type Config, isLoopbackAddress } from "./config/schema.ts";
import { serialRuns } from "./admin/serial.ts";
import type { ReloadOutcome } from "./admin/admin.ts";
import { formatProblem, loadConfig, type TlsPairProblem, type TlsPem } from "./config/mod.ts";
import { listenQuic, quicEndpointWithTcpTwin } from "./quic/deno_transport.ts";
import { readUdpStats } from "./quic/udp_stats.ts";
import { QuicReceiveBuffer } from "./quic/receive_buffer.ts";
import { ProxyRuntime } from "./runtime.ts";
import { H3Server } from "./server/server.ts";
import { tcpFallbackHandler } from "./server/tcp_fallback.ts";
import {
  fallbackMaxConnections,
  ListenerStartError,
  listenerStartError,
  readProcessLimits,
  startAdminListener,
  startTcpFallback,
} from "./server/tcp_listeners.ts";
import type { ConnectionServer, TlsConnectionServer } from "../shared/serve_connections.ts";
import { createH2Transport } from "./upstream/h2_transport.ts";
import { type AccessLog, createAccessLog } from "./access_log.ts";
import { createRequestSink, type RequestSink } from "./request_log.ts";
import { settledWithin } from "../shared/deadline.ts";

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

/** QPACK dynamic table we offer clients (bytes) and the streams they may block. */
const QPACK_MAX_TABLE_CAPACITY = 4096;
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

  const loaded = await loadConfig(cli.config, { checkTlsPair });
  if (!loaded.ok) {
    if (loaded.kind === "load") {
      console.error(`Error loading config: ${loaded.message}`);
    } else {
      for (const p of loaded.problems) console.error(formatProblem(p));
      console.error(
        cli.check
          ? "Configuration validation failed."
          : "Configuration validation failed. Exiting...",
      );
    }
    return 1;
  }
  const config = loaded.config;
  for (const w of loaded.warnings) console.error(`Warning: ${formatProblem(w)}`);
  if (cli.check) {
    // What startup would open next: the log file and the access-log file.
    const problems = checkLogFiles(config);
    for (const p of problems) console.error(p);
    if (problems.length > 0) {
      console.error("Configuration validation failed.");
      return 1;
    }
    console.log(`Configuration validation successful: ${cli.config}`);
    return 0;
  }
  console.log("Configuration validation successful");

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
    return await run(config, cli.config, loaded.pem!);
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

async function run(config: Config, configPath: string, pem: TlsPem): Promise<number> {
  const log = getLogger(["proxy"]);
  // The loader read and checked these (regular files only, bounded, as a
  // pair the listener accepts) from paths resolved against the config's folder.
  const { cert, key } = pem;
  log.info("certificate loaded from {path}", { path: config.listen.tls.cert });
  // The pair new HTTP/3 connections get; a reload re-reads the files.
  let served = { cert, key };

  const probeClient = Deno.createHttpClient({ http1: false, http2: true, allowHost: true });
  const runtime = new ProxyRuntime(config, {
    userAgent: USER_AGENT,
    transport: createH2Transport(),
    probeFetch: (url, init) => fetch(url, { ...init, client: init.client ?? probeClient }),
  });
  // Every finished request, on every listener, is counted and logged here once.
  const sink = createRequestSink(runtime.metrics, openAccessLog(config));
  runtime.start();
  const metrics = runtime.metrics;

  // The QUIC socket's receive buffer, raised once the socket is bound (below).
  const receiveBuffer = new QuicReceiveBuffer({
    wanted: config.limits.udp_receive_buffer,
    loopbackOnly: isLoopbackAddress(config.listen.address),
  });
  const quicOptions: Parameters<typeof listenQuic>[0] = {
    hostname: config.listen.address,
    port: config.listen.port,
    cert,
    key,
    maxStreams: config.listen.max_streams,
    idleTimeoutMs: config.listen.idle_timeout_ms,
    limits: {
      handshakeTimeoutMs: config.limits.handshake_timeout_ms,
      maxHandshakes: config.limits.max_handshakes,
      maxConnections: config.limits.max_connections,
      maxPerAddress: config.limits.max_connections_per_address,
      maxHandshakesPerAddress: config.limits.max_handshakes_per_address,
      maxHandshakesPerNetwork: config.limits.max_handshakes_per_network,
      maxHandshakeRate: config.limits.max_handshake_rate,
      addressPrefix: { v4: config.limits.address_prefix_v4, v6: config.limits.address_prefix_v6 },
      networkPrefix: { v4: config.limits.network_prefix_v4, v6: config.limits.network_prefix_v6 },
    },
    onRejected: (reason) => {
      metrics.recordRejected(reason);
      receiveBuffer.rejected(reason);
    },
  };
  const transport = bindNamed(
    "HTTP/3 listener",
    config.listen.address,
    config.listen.port,
    "listen.address, listen.port",
  )(() =>
    listenQuic({
      ...quicOptions,
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
    ...readUdpStats(transport.addr.port),
  });
  const server = new H3Server(transport, {
    handler: runtime.handler,
    maxFieldSectionSize: config.limits.max_header_list_size,
    maxRequestBodyBytes: config.limits.max_request_body_bytes,
    requestIdleTimeoutMs: config.limits.request_idle_timeout_ms,
    maxBackendStreamsPerConnection: config.limits.max_backend_streams_per_connection,
    qpackMaxTableCapacity: QPACK_MAX_TABLE_CAPACITY,
    qpackBlockedStreams: QPACK_BLOCKED_STREAMS,
    hooks: {
      streamOpened: () => metrics.activeStreams++,
      streamClosed: () => metrics.activeStreams--,
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
  });
  server.start();
  const port = transport.addr.port;

  const { promise: stop, resolve: requestStop } = Promise.withResolvers<string>();
  /** The configuration whose `log` settings are in effect. */
  let logged = config;

  let fallback: TlsConnectionServer | undefined;
  if (config.listen.tcp_fallback) {
    const l = config.limits;
    const tcpFallback = startTcpFallback({
      hostname: config.listen.address,
      port,
      tls: { cert, key },
      handler: tcpFallbackHandler(runtime.handler, port, {
        done: sink.finished,
        maxBackendStreamsPerConnection: config.limits.max_backend_streams_per_connection,
        writeStallMs: config.limits.request_idle_timeout_ms,
      }),
      limits: {
        maxConnections: l.tcp_max_connections === "auto"
          ? fallbackMaxConnections(readProcessLimits(), config.admin?.max_connections ?? 0)
          : l.tcp_max_connections,
        headerTimeoutMs: l.tcp_header_timeout_ms,
        idleTimeoutMs: l.tcp_idle_timeout_ms,
      },
    });
    fallback = tcpFallback;
    metrics.tcpListeners.set("tcp_fallback", () => tcpFallback.stats());
    log.info(
      "TCP fallback (HTTP/2, HTTP/1.1 over TLS) on {address}:{port}: at most {max} connections",
      { address: config.listen.address, port, max: tcpFallback.limits.maxConnections },
    );
  }

  // One reload at a time; one asked for during a reload gets its own, which
  // reads the file after it was asked for (a change written meanwhile is
  // not lost).
  const reload = serialRuns(async (): Promise<ReloadOutcome> => {
    // Every file is read off the event loop, bounded, regular files only: a
    // FIFO or a device in place of a file rejects the reload, never hangs it.
    const loaded = await loadConfig(configPath, { checkTlsPair });
    if (!loaded.ok) {
      const errors = loaded.kind === "load"
        ? [loaded.message]
        : loaded.problems.map((p) => formatProblem(p));
      for (const e of errors) log.error("reload rejected: {error}", { error: e });
      log.error("configuration reload failed; the previous configuration keeps serving");
      return { ok: false, errors };
    }
    for (const w of loaded.warnings) {
      log.warn("reload: {warning}", { warning: formatProblem(w) });
    }
    // Log files that cannot be written (or a bad RUST_LOG) stop startup, so
    // they reject a reload too, before anything changes.
    const logProblems = checkLogFiles(loaded.config);
    if (logProblems.length > 0) {
      for (const e of logProblems) log.error("reload rejected: {error}", { error: e });
      log.error("configuration reload failed; the previous configuration keeps serving");
      return { ok: false, errors: logProblems };
    }
    // The certificate first: a pair that cannot be used rejects the whole
    // reload, before anything else changes.
    const tls = loaded.config.listen.tls;
    let renewed: boolean;
    try {
      const next = loaded.pem!;
      renewed = next.cert !== served.cert || next.key !== served.key;
      if (renewed) {
        // Both listeners or neither: the TCP fallback first (it changes
        // nothing when it throws), then HTTP/3.
        fallback?.setCertificate(next.cert, next.key);
        try {
          transport.setCertificate(next.cert, next.key);
        } catch (err) {
          fallback?.setCertificate(served.cert, served.key);
          throw err;
        }
        served = next;
      }
    } catch (err) {
      const error = `listen.tls: the certificate and key cannot be used: ${(err as Error).message}`;
      log.error("reload rejected: {error}", { error });
      log.error("configuration reload failed; the previous configuration keeps serving");
      return { ok: false, errors: [error] };
    }
    const restartRequired = await runtime.reload(loaded.config);
    // Logging as the new file says: level, log file, access log.
    const logChange = await applyLogConfig(logged, loaded.config, sink);
    // What could not be applied is tried again at the next reload.
    if (logChange.applied) logged = loaded.config;
    restartRequired.push(...logChange.notes);
    if (renewed) {
      log.info("new {which} connections get the certificate from {path}", {
        which: fallback ? "HTTP/3 and TCP fallback" : "HTTP/3",
        path: tls.cert,
      });
    }
    return { ok: true, restartRequired };
  });

  let admin: ConnectionServer | undefined;
  if (config.admin) {
    // Loaded only when the admin listener is configured (Hono is not on the
    // default start path).
    const { createAdminApp } = await import("./admin/admin.ts");
    const app = createAdminApp({
      runtime,
      connections: () => server.connections(),
      reload,
      drain: () => requestStop("admin drain"),
      version: VERSION,
      token: config.admin.token,
    });
    const adminServer = startAdminListener({
      hostname: config.admin.address,
      port: config.admin.port,
      handler: app.fetch,
      limits: {
        maxConnections: config.admin.max_connections,
        headerTimeoutMs: config.admin.header_timeout_ms,
        idleTimeoutMs: config.admin.idle_timeout_ms,
      },
    });
    admin = adminServer;
    metrics.tcpListeners.set("admin", () => adminServer.stats());
    console.log(`Admin listening on ${config.admin.address}:${admin.addr.port}`);
  }

  // Signals are handled before the line that tells a supervisor (or a test)
  // the proxy is up: a SIGTERM right after it drains rather than kills.
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  let stopping = false;
  const onSignal = Object.fromEntries(signals.map((s) => [s, () => {
    // Kept during the drain: a second signal (Ctrl-C reaches every process
    // of the terminal's group, and a supervisor may add SIGTERM) must not
    // kill the proxy mid-drain, which would lose "Shutdown complete".
    if (stopping) log.info("{signal}: shutdown already under way", { signal: s });
    stopping = true;
    requestStop(s);
  }]));
  for (const s of signals) Deno.addSignalListener(s, onSignal[s]);
  const onHup = () => void reload();
  Deno.addSignalListener("SIGHUP", onHup);
  console.log(`Listening on ${config.listen.address}:${port}`);

  const reason = await stop;
  stopping = true;
  Deno.removeSignalListener("SIGHUP", onHup);

  log.info("Draining connections ({reason})", { reason });
  const drainMs = runtime.config.limits.drain_timeout_ms;
  const drains: Promise<unknown>[] = [server.shutdown(drainMs)];
  // The fallback's shutdown waits for every handler; past the drain bound its
  // connections are closed, and the transport is closed below, which ends
  // whatever a handler still waits on.
  if (fallback) {
    const tcp = fallback;
    drains.push(settledWithin(tcp.shutdown(), drainMs).then((done) => done || tcp.close()));
  }
  await Promise.allSettled(drains);
  // Cancels every exchange still open with a backend.
  await runtime.stop();
  receiveBuffer.stop();
  if (admin && !(await settledWithin(admin.shutdown(), 1000))) admin.close();
  probeClient.close();
  sink.close();
  log.info("Shutdown complete");
  await teardownLogging();
  for (const s of signals) Deno.removeSignalListener(s, onSignal[s]);
  return 0;
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

/**
 * Whether the log file and the access-log file of `config` can be opened
 * for append (created, 0600, if missing, as startup would), and whether
 * `RUST_LOG` parses: one line per problem, naming its key.
 */
function checkLogFiles(config: Config): string[] {
  const files: Array<[string, string]> = [];
  if (config.log.file.enabled) {
    files.push(["log.file.path", resolveLogFilePath(PRODUCT, config.log.file.path)]);
  }
  if (config.log.access.enabled && config.log.access.file !== undefined) {
    files.push(["log.access.file", config.log.access.file]);
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
async function applyLogConfig(
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
function openAccessLog(config: Config): AccessLog | undefined {
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

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
