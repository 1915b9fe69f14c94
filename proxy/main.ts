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
import type { Config } from "../shared/config_schema.ts";
import { createProxyApp } from "./app.ts";
import type { BackendRef } from "./balancer/mod.ts";
import { formatProblem, loadConfig } from "./config/mod.ts";
import { HealthChecker, PassiveHealth } from "./health/mod.ts";
import { ProxyMetrics } from "./metrics/metrics.ts";
import { listenQuic } from "./quic/deno_transport.ts";
import { H3Server } from "./server/server.ts";

const HELP = `${PRODUCT} ${VERSION}: HTTP/3 edge proxy forwarding to HTTP/2 backends

Usage: deno run -A proxy/main.ts -c <config.yaml>

Options:
  -c, --config <path>  configuration file (YAML), required
  -V, --version        print the version and exit
  -h, --help           print this help and exit

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
    return await run(config);
  } catch (err) {
    getLogger(["proxy"]).error("fatal: {error}", { error: String(err) });
    console.error(`Error: ${(err as Error).message}`);
    await teardownLogging();
    return 1;
  }
}

async function run(config: Config): Promise<number> {
  const log = getLogger(["proxy"]);
  // The loader resolved these against the configuration file's folder.
  const certPath = config.listen.tls.cert;
  const keyPath = config.listen.tls.key;
  const cert = await Deno.readTextFile(certPath);
  const key = await Deno.readTextFile(keyPath);
  log.info("certificate loaded from {path}", { path: certPath });

  const metrics = new ProxyMetrics();
  const clients = new Map<string, Deno.HttpClient>();
  const allBackends = Object.values(config.upstream).flatMap((u) => u.backends);
  for (const b of allBackends) {
    clients.set(b.id, Deno.createHttpClient({ http1: false, http2: true, allowHost: true }));
  }
  const fetchBackend = (b: BackendRef, url: string, init: RequestInit) =>
    fetch(url, { ...init, client: clients.get(b.id) });

  const probeClient = Deno.createHttpClient({ http1: false, http2: true, allowHost: true });
  const checker = new HealthChecker({
    backends: allBackends,
    fetch: (url, init) => fetch(url, { ...init, client: probeClient }),
    userAgent: USER_AGENT,
  });
  const passive = new PassiveHealth({ consecutiveFailures: 5, ejectMs: 5000 });
  checker.start();

  const handler = createProxyApp({
    config,
    metrics,
    fetchBackend,
    health: {
      isAvailable: (id) => checker.isHealthy(id) && !passive.isEjected(id),
      report(id, outcome) {
        if (outcome === "success") passive.reportSuccess(id);
        else passive.reportFailure(id, outcome);
      },
    },
  });

  const transport = listenQuic({
    hostname: config.listen.address,
    port: config.listen.port,
    cert,
    key,
    maxStreams: config.listen.max_streams,
    idleTimeoutMs: config.listen.idle_timeout_ms,
  });
  const server = new H3Server(transport, {
    handler,
    maxFieldSectionSize: config.limits.max_header_list_size,
    maxRequestBodyBytes: config.limits.max_request_body_bytes,
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
  console.log(`Listening on ${config.listen.address}:${transport.addr.port}`);

  const { promise: stop, resolve: requestStop } = Promise.withResolvers<string>();
  const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
  const onSignal = Object.fromEntries(signals.map((s) => [s, () => requestStop(s)]));
  for (const s of signals) Deno.addSignalListener(s, onSignal[s]);
  const signal = await stop;
  for (const s of signals) Deno.removeSignalListener(s, onSignal[s]);

  log.info("Draining connections ({signal})", { signal });
  await server.shutdown(config.limits.drain_timeout_ms);
  await checker.stop();
  for (const c of clients.values()) c.close();
  probeClient.close();
  log.info("Shutdown complete");
  await teardownLogging();
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
