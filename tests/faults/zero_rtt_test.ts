/**
 * Fault tests for 0-RTT (issue #33): a request sent as 0-RTT early data is
 * forwarded only once the client's handshake has completed, and a replayed
 * first flight (a ClientHello with a session ticket, and the 0-RTT packets
 * carrying a POST) never reaches the HTTP/3 layer, let alone the backend.
 *
 * gtlsclient resumes with `--session-file`/`--tp-file` (a first run against
 * the proxy stores the ticket) and sends its request in 0-RTT packets; a UDP
 * relay on loopback (`tests/support/udp_relay.ts`) holds the client's
 * Finished, or records its first flight and sends it again from a new port,
 * as an attacker on the path could.
 */
import assert from "node:assert/strict";
import { gtls, type GtlsResult } from "../support/gtls.ts";
import { startProxy } from "../support/proxy_process.ts";
import { type RelayedDatagram, startUdpRelay, type UdpRelay } from "../support/udp_relay.ts";
import { faultConfig } from "../support/faults.ts";
import { sleep, withTimeout } from "../support/wait.ts";
import { scrapeMetrics } from "../support/metrics.ts";

/** One request the backend received, and when. */
interface Seen {
  method: string;
  path: string;
  at: number;
}

/** An h2c backend that records what reaches it. */
function recordingBackend(): { address: string; seen: Seen[]; close(): Promise<void> } {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    seen.push({ method: req.method, path: new URL(req.url).pathname, at: performance.now() });
    await req.arrayBuffer();
    return new Response("ok");
  });
  return {
    address: `127.0.0.1:${server.addr.port}`,
    seen,
    close: () => server.shutdown(),
  };
}

/**
 * A client's session: its ticket and transport parameters, stored by a first
 * run against the proxy itself. `idle` is the idle timeout the client puts in
 * its transport parameters, which a replay of its first flight carries too.
 */
async function session(proxyPort: number, idle: string): Promise<string[]> {
  const dir = await Deno.makeTempDir({ prefix: "spooky-0rtt-" });
  const args = [`--session-file=${dir}/session`, `--tp-file=${dir}/tp`, `--timeout=${idle}`];
  const first = await gtls(proxyPort, `https://localhost:${proxyPort}/warmup`, { extra: args });
  assert.deepEqual(first.statuses, [200], first.output);
  assert.ok((await Deno.stat(`${dir}/session`)).size > 0, "no session ticket stored");
  return args;
}

/** A resumed POST through the relay: its request rides in 0-RTT packets. */
async function resumedPost(relay: UdpRelay, proxyPort: number, args: string[], path: string) {
  const body = await Deno.makeTempFile({ prefix: "spooky-0rtt-body-" });
  await Deno.writeTextFile(body, "amount=100");
  return gtls(relay.port, `https://localhost:${proxyPort}${path}`, {
    method: "POST",
    data: body,
    extra: args,
    timeoutMs: 20_000,
  });
}

/**
 * A flow's first flight: what the client sent before the server's first
 * answer came back through the relay, in its first 300 ms (a retransmission
 * comes after about a second).
 */
function firstFlight(relay: UdpRelay, flow: number): RelayedDatagram[] {
  const ofFlow = relay.seen.filter((d) => d.flow === flow);
  const start = ofFlow[0]?.at ?? 0;
  const answer = ofFlow.find((d) => d.direction === "to_client")?.at ?? Infinity;
  return ofFlow.filter((d) => d.direction === "to_server" && d.at < answer && d.at - start < 300);
}

/** Waits until `ready()` holds, checking every 50 ms, for at most `ms`. */
async function until(ready: () => boolean | Promise<boolean>, ms: number, what: string) {
  await withTimeout(
    (async () => {
      while (!(await ready())) await sleep(50);
    })(),
    ms,
    what,
  );
}

async function rejectedFor(adminPort: number, reason: string): Promise<number> {
  const text = await scrapeMetrics(adminPort);
  const m = new RegExp(`^spooky_connections_rejected_total\\{reason="${reason}"\\} (\\d+)$`, "m")
    .exec(text);
  return Number(m?.[1] ?? NaN);
}

function earlyDataAccepted(r: GtlsResult): boolean {
  return !/Early data was rejected/.test(r.output);
}

const PROXY_LOG = { RUST_LOG: "warn,proxy::server=trace,proxy::quic=debug" };

Deno.test("#33.1: a request in 0-RTT early data is forwarded only after the client's Finished arrives", async () => {
  const be = recordingBackend();
  const proxy = await startProxy(faultConfig([be.address]), PROXY_LOG);
  let relay: UdpRelay | undefined;
  try {
    const args = await session(proxy.port, "10s");
    // Everything the client sends from its Finished on (the first datagram
    // with a Handshake packet) is held until released.
    let holding = true;
    let heldAt = 0;
    relay = startUdpRelay({
      serverPort: proxy.port,
      decide(d) {
        if (d.direction !== "to_server" || !holding) return "forward";
        if (heldAt === 0 && !d.packets.includes("handshake")) return "forward";
        heldAt ||= performance.now();
        return "hold";
      },
    });
    const client = resumedPost(relay, proxy.port, args, "/pay");
    await until(() => heldAt > 0, 10_000, "the client's Finished");
    // The server has the 0-RTT request now; with the Finished held its
    // handshake cannot complete, and nothing may reach the backend. Forwarding
    // early would take a few ms; the hold is a second.
    await sleep(1000);
    assert.deepEqual(be.seen.filter((s) => s.path === "/pay"), [], "forwarded before Finished");
    const flight = firstFlight(relay, 0);
    assert.ok(flight.some((d) => d.packets.includes("0rtt")), "the request was not sent in 0-RTT");
    const releasedAt = performance.now();
    holding = false;
    await relay.release();
    const r = await client;
    assert.deepEqual(r.statuses, [200], r.output);
    assert.ok(earlyDataAccepted(r), "the proxy rejected the early data: nothing was tested");
    const posts = be.seen.filter((s) => s.path === "/pay");
    assert.equal(posts.length, 1);
    assert.ok(posts[0].at >= releasedAt, "forwarded before the Finished was released");
  } finally {
    relay?.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});

Deno.test("#33.2: a replayed first flight dies unfinished and never reaches the HTTP/3 layer, its ticket fresh or used", async () => {
  const be = recordingBackend();
  const proxy = await startProxy(
    faultConfig([be.address], { extra: "admin: {address: 127.0.0.1, port: 0}" }),
    PROXY_LOG,
  );
  let relay: UdpRelay | undefined;
  try {
    // The replays carry the client's 3 s idle timeout: they die before the
    // proxy's 10 s handshake deadline would close them, and `handshake`
    // resolves for them as for a completed one.
    const suppressed = await session(proxy.port, "3s");
    const genuine = await session(proxy.port, "3s");
    relay = startUdpRelay({
      serverPort: proxy.port,
      // Flow 0: the genuine flight never arrives, so the attacker's copy is
      // the first use of its ticket (its 0-RTT accepted). Flow 1: the genuine
      // client is served, and its flight is replayed after its ticket was used.
      decide: (d) => d.flow === 0 && d.direction === "to_server" ? "drop" : "forward",
    });
    const lost = resumedPost(relay, proxy.port, suppressed, "/lost");
    await until(() => firstFlight(relay!, 0).length > 0, 10_000, "the first flight");
    await sleep(300);
    const served = await resumedPost(relay, proxy.port, genuine, "/served");
    assert.deepEqual(served.statuses, [200], served.output);
    assert.ok(earlyDataAccepted(served), served.output);
    const flights = [firstFlight(relay, 0), firstFlight(relay, 1)];
    for (const f of flights) assert.ok(f.some((d) => d.packets.includes("0rtt")), "no 0-RTT sent");
    // The served connection's Initial connection ID stays routed to it while
    // it drains: the replay comes after, as a new connection.
    await sleep(1000);
    const replays = [];
    for (const f of flights) replays.push(await relay.replay(f.map((d) => d.bytes)));
    const replayPorts = replays.map((flow) => relay!.serverSidePort(flow));

    // Each replay ends in one of two log lines: refused by the transport
    // (debug), or handed to the HTTP/3 layer (`connection from`, trace).
    const linesOf = (port?: number) =>
      proxy.stderr.filter((l) => l.includes(`127.0.0.1:${port}`)).join("\n");
    await until(
      () => replayPorts.every((port) => /not served|connection from/.test(linesOf(port))),
      15_000,
      "the replays' end",
    );
    for (const port of replayPorts) {
      assert.doesNotMatch(linesOf(port), /connection from/, "a replay reached the HTTP/3 layer");
      assert.match(linesOf(port), /not served: connection not established/);
    }
    await lost;
    assert.equal(await rejectedFor(proxy.adminPort!, "handshake_failed"), 2);
    assert.deepEqual(
      be.seen.map((s) => `${s.method} ${s.path}`).filter((s) => s !== "GET /warmup"),
      [
        "POST /served",
      ],
    );
  } finally {
    relay?.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
  }
});
