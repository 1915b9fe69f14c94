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
import type { Config } from "./config/schema.ts";
import { serialRuns } from "./admin/serial.ts";
import { createAdminApp, type ReloadOutcome } from "./admin/admin.ts";
import { formatProblem, loadConfig } from "./config/mod.ts";
import { listenQuic } from "./quic/deno_transport.ts";
import { ProxyRuntime } from "./runtime.ts";
import { H3Server } from "./server/server.ts";
import { tcpFallbackHandler } from "./server/tcp_fallback.ts";

const HELP = `${PRODUCT} ${VERSION}: HTTP/3 edge proxy forwarding to HTTP/2 backends

Usage: deno run -A proxy/main.ts -c <config.yaml>

Options:
  -c, --config <path>  configuration file (YAML), required
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

function parseCli(args: string[]): { config?: string; version: boolean; help: boolean } {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: "string", short: "c" },
      version: { type: "boolean", short: "V", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  return { config: values.config, version: values.version!, help: values.help! };
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

  const loaded = await loadConfig(cli.config);
  if (!loaded.ok) {
    if (loaded.kind === "load") {
      console.error(`Error loading config: ${loaded.message}`);
    } else {
      for (const p of loaded.problems) console.error(formatProblem(p));
      console.error("Configuration validation failed. Exiting...");
    }
    return 1;
  }
  const config = loaded.config;
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
    return await run(config, cli.config);
  } catch (err) {
    getLogger(["proxy"]).error("fatal: {error}", { error: String(err) });
    console.error(`Error: ${(err as Error).message}`);
    await teardownLogging();
    return 1;
  }
}

async function run(config: Config, configPath: string): Promise<number> {
  const log = getLogger(["proxy"]);
  // The loader resolved these against the configuration file's folder.
  const certPath = config.listen.tls.cert;
  const keyPath = config.listen.tls.key;
  const cert = await Deno.readTextFile(certPath);
  const key = await Deno.readTextFile(keyPath);
  log.info("certificate loaded from {path}", { path: certPath });
  // The pair new HTTP/3 connections get; a reload re-reads the files.
  let served = { cert, key };

  const probeClient = Deno.createHttpClient({ http1: false, http2: true, allowHost: true });
  const runtime = new ProxyRuntime(config, {
    userAgent: USER_AGENT,
    openClient(_address) {
      // One pooled HTTP/2 (h2c, prior knowledge) client per backend address.
      const client = Deno.createHttpClient({ http1: false, http2: true, allowHost: true });
      return {
        fetch: (url, init) => fetch(url, { ...init, client }),
        close: () => client.close(),
      };
    },
    probeFetch: (url, init) => fetch(url, { ...init, client: init.client ?? probeClient }),
  });
  runtime.start();
  const metrics = runtime.metrics;

  const transport = listenQuic({
    hostname: config.listen.address,
    port: config.listen.port,
    cert,
    key,
    maxStreams: config.listen.max_streams,
    idleTimeoutMs: config.listen.idle_timeout_ms,
  });
  const server = new H3Server(transport, {
    handler: runtime.handler,
    maxFieldSectionSize: config.limits.max_header_list_size,
    maxRequestBodyBytes: config.limits.max_request_body_bytes,
    requestIdleTimeoutMs: config.limits.request_idle_timeout_ms,
    qpackMaxTableCapacity: QPACK_MAX_TABLE_CAPACITY,
    qpackBlockedStreams: QPACK_BLOCKED_STREAMS,
    hooks: {
      streamOpened: () => metrics.activeStreams++,
      streamClosed: () => metrics.activeStreams--,
    },
    onConnectionOpened: () => metrics.activeConnections++,
    onConnectionClosed: () => metrics.activeConnections--,
  });
  server.start();
  const port = transport.addr.port;

  const { promise: stop, resolve: requestStop } = Promise.withResolvers<string>();

  let fallback: Deno.HttpServer | undefined;
  if (config.listen.tcp_fallback) {
    fallback = Deno.serve({
      hostname: config.listen.address,
      port,
      cert,
      key,
      onListen() {},
    }, tcpFallbackHandler(runtime.handler, port));
    log.info("TCP fallback (HTTP/2, HTTP/1.1 over TLS) on {address}:{port}", {
      address: config.listen.address,
      port,
    });
  }

  // One reload at a time; one asked for during a reload gets its own, which
  // reads the file after it was asked for (a change written meanwhile is
  // not lost).
  const reload = serialRuns(async (): Promise<ReloadOutcome> => {
    const loaded = await loadConfig(configPath);
    if (!loaded.ok) {
      const errors = loaded.kind === "load"
        ? [loaded.message]
        : loaded.problems.map((p) => formatProblem(p));
      for (const e of errors) log.error("reload rejected: {error}", { error: e });
      log.error("configuration reload failed; the previous configuration keeps serving");
      return { ok: false, errors };
    }
    // The certificate first: a pair that cannot be used rejects the whole
    // reload, before anything else changes.
    const tls = loaded.config.listen.tls;
    let renewed: boolean;
    try {
      const next = {
        cert: await Deno.readTextFile(tls.cert),
        key: await Deno.readTextFile(tls.key),
      };
      renewed = next.cert !== served.cert || next.key !== served.key;
      if (renewed) {
        transport.setCertificate(next.cert, next.key);
        served = next;
      }
    } catch (err) {
      const error = `listen.tls: the certificate and key cannot be used: ${(err as Error).message}`;
      log.error("reload rejected: {error}", { error });
      log.error("configuration reload failed; the previous configuration keeps serving");
      return { ok: false, errors: [error] };
    }
    const restartRequired = await runtime.reload(loaded.config);
    if (renewed) {
      log.info("new HTTP/3 connections get the certificate from {path}", { path: tls.cert });
      if (config.listen.tcp_fallback) {
        // Deno.serve cannot change its certificate.
        log.warn("listen.tls changed: the TCP fallback takes it after a restart");
        restartRequired.push("listen.tls (TCP fallback)");
      }
    }
    return { ok: true, restartRequired };
  });

  let admin: Deno.HttpServer<Deno.NetAddr> | undefined;
  if (config.admin) {
    const app = createAdminApp({
      runtime,
      connections: () => server.connections(),
      reload,
      drain: () => requestStop("admin drain"),
      version: VERSION,
      token: config.admin.token,
    });
    admin = Deno.serve({
      hostname: config.admin.address,
      port: config.admin.port,
      onListen() {},
    }, app.fetch);
    console.log(`Admin listening on ${config.admin.address}:${admin.addr.port}`);
  }

  console.log(`Listening on ${config.listen.address}:${port}`);

  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  const onSignal = Object.fromEntries(signals.map((s) => [s, () => requestStop(s)]));
  for (const s of signals) Deno.addSignalListener(s, onSignal[s]);
  const onHup = () => void reload();
  Deno.addSignalListener("SIGHUP", onHup);
  const reason = await stop;
  for (const s of signals) Deno.removeSignalListener(s, onSignal[s]);
  Deno.removeSignalListener("SIGHUP", onHup);

  log.info("Draining connections ({reason})", { reason });
  const drains: Promise<unknown>[] = [server.shutdown(config.limits.drain_timeout_ms)];
  if (fallback) drains.push(fallback.shutdown());
  await Promise.allSettled(drains);
  await admin?.shutdown();
  await runtime.stop();
  probeClient.close();
  log.info("Shutdown complete");
  await teardownLogging();
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
