import assert from "node:assert/strict";
import { cpuPerRequest } from "./load.ts";
import { peerOf, ratioRows, renderMarkdown } from "./report.ts";
import type { BenchResults, LoadRow } from "./results.ts";
import { serverSpecs } from "./servers.ts";

function row(server: string, kind: LoadRow["kind"], conns: number, rps: number, cpu: number) {
  return {
    server,
    kind,
    conns,
    requests: 4000,
    rounds: 3,
    rps,
    cpuUsPerReq: cpu,
    rpsAll: [rps],
    cpuAll: [cpu],
    threads: { main: cpu * 0.8, "V8 DefaultWorke": cpu * 0.2 },
    failedRuns: 0,
  };
}

const results: BenchResults = {
  quick: true,
  machine: {
    date: "2026-11-24T00:00:00.000Z",
    nproc: 2,
    cpu: "test",
    memGiB: 1,
    kernel: "test",
    deno: "2.9.6",
    caddy: "v2.6.2",
    gtlsclient: "test",
    loadAvg: "0 0 0",
  },
  settings: {
    rounds: 3,
    requests: 4000,
    latencyRequests: 100,
    bgRate: 200,
    streamBytes: 1,
    idleConns: 1,
  },
  servers: ["floor", "spooky", "spooky-w0", "caddy"],
  load: [
    row("floor", "floor", 4, 6000, 120),
    row("spooky", "spooky", 4, 4500, 240),
    row("spooky-w0", "spooky", 4, 3000, 150),
    row("caddy", "caddy", 4, 6000, 100),
  ],
  latency: [],
  streams: [],
  idle: [],
};

Deno.test("ratioRows: every spooky variant over the floor and Caddy at the same level", () => {
  assert.deepEqual(ratioRows(results), [
    {
      server: "spooky",
      conns: 4,
      rpsVsFloor: "0.75x",
      cpuVsFloor: "2.00x",
      rpsVsCaddy: "0.75x",
      cpuVsCaddy: "2.40x",
    },
    {
      server: "spooky-w0",
      conns: 4,
      rpsVsFloor: "0.50x",
      cpuVsFloor: "1.25x",
      rpsVsCaddy: "0.50x",
      cpuVsCaddy: "1.50x",
    },
  ]);
  const md = renderMarkdown(results);
  assert.match(md, /\| spooky-w0 \| 4 \| 0\.50x \| 1\.25x \| 0\.50x \| 1\.50x \|/);
});

Deno.test("ratioRows: the HTTP/1.1 spooky row is compared with the HTTP/1.1 Caddy row", () => {
  const rows = ratioRows({
    ...results,
    servers: ["floor", "spooky", "caddy", "spooky-h1", "caddy-h1"],
    load: [
      row("floor", "floor", 4, 6000, 120),
      row("spooky", "spooky", 4, 4500, 240),
      row("caddy", "caddy", 4, 6000, 100),
      row("spooky-h1", "spooky", 4, 5000, 200),
      row("caddy-h1", "caddy", 4, 4000, 250),
    ],
  });
  assert.deepEqual(rows.map((x) => [x.server, x.rpsVsCaddy, x.cpuVsCaddy]), [
    ["spooky", "0.75x", "2.40x"],
    ["spooky-h1", "1.25x", "0.80x"],
  ]);
  assert.equal(peerOf("caddy", "spooky-h1", ["spooky-h1", "caddy"]), "caddy", "no caddy-h1: caddy");
  assert.equal(peerOf("caddy", "spooky-w0", ["spooky-w0", "caddy-w0"]), "caddy-w0");
  assert.equal(peerOf("floor", "spooky-h1", ["floor", "floor-h1", "spooky-h1"]), "floor-h1");
  assert.equal(peerOf("floor", "spooky-h1", ["floor", "spooky-h1"]), "floor", "no floor-h1");
});

Deno.test("ratioRows: n/a without a floor or Caddy", () => {
  const rows = ratioRows({ ...results, load: results.load.filter((x) => x.kind === "spooky") });
  assert.equal(rows[0].cpuVsFloor, "n/a");
  assert.equal(rows[0].rpsVsCaddy, "n/a");
});

Deno.test("cpuPerRequest: ticks to µs/req by thread group, exited threads from the total", () => {
  const before = {
    total: 100,
    threads: new Map<string, [string, number]>([["1", ["main", 80]], ["2", ["worker", 20]]]),
  };
  const after = {
    total: 150, // +50 ticks = 0.5 s
    threads: new Map<string, [string, number]>([
      ["1", ["main", 110]], // +30
      ["3", ["worker", 10]], // new thread: +10
    ]), // thread 2 exited: 10 ticks unaccounted
  };
  const r = cpuPerRequest(before, after, 1000);
  assert.equal(r.totalUs, 500);
  assert.deepEqual(r.threads, { main: 300, worker: 100, "(exited)": 100 });
});

Deno.test("serverSpecs: one server per name, in order; unknown names fail", () => {
  assert.deepEqual(
    serverSpecs([
      "floor",
      "floor-worker",
      "floor-h2",
      "floor-h1",
      "spooky",
      "caddy",
      "spooky-h1",
      "caddy-h1",
    ]),
    [
      { name: "floor", kind: "floor" },
      { name: "floor-worker", kind: "floor", worker: true },
      { name: "floor-h2", kind: "floor", nodeHttp2: true },
      { name: "floor-h1", kind: "floor", upstream: "http1" },
      { name: "spooky", kind: "spooky" },
      { name: "caddy", kind: "caddy" },
      { name: "spooky-h1", kind: "spooky", upstream: "http1" },
      { name: "caddy-h1", kind: "caddy", upstream: "http1" },
    ],
  );
  assert.throws(() => serverSpecs(["nginx"]), /unknown server/);
  assert.throws(() => serverSpecs(["spooky-node"]), /unknown server/);
});
