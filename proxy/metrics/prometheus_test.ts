import assert from "node:assert/strict";
import { ProxyMetrics } from "./metrics.ts";
import { METRIC_FAMILIES, type MetricsView, renderPrometheus } from "./prometheus.ts";
import {
  UPSTREAM_CLOSE_REASONS,
  type UpstreamCloseReason,
  type UpstreamConnectionsView,
} from "./views.ts";
import { needs } from "../../tests/support/tools.ts";

function view(): MetricsView {
  const m = new ProxyMetrics();
  m.record("a", 200);
  m.record("a", 201);
  m.record("a", 304);
  m.record("b", 503, "timeout");
  m.record("b", 502, "error");
  m.record(null, 404);
  m.recordPick("a");
  m.latency.observe(0.01);
  m.websockets.opened("api");
  m.websockets.opened("api");
  m.websockets.ended("api", "idle_timeout", true);
  m.websockets.ended("api", "refused");
  return {
    global: m.global,
    backends: [
      {
        id: "a",
        pool: "api",
        counters: m.backend("a"),
        healthy: true,
        enabled: true,
        weight: 100,
        picks: 3,
      },
      {
        id: "b",
        pool: "api",
        counters: m.backend("b"),
        healthy: false,
        enabled: true,
        weight: 50,
        picks: 2,
        inflight: 4,
        overloaded: { max_inflight: 6, max_pending: 7 },
      },
    ],
    latency: m.latency.snapshot(),
    activeConnections: 1,
    activeStreams: 0,
    tcpListeners: [
      {
        listener: "tcp_fallback",
        open: 7,
        refused: 1,
        shed: 4,
        notRelayed: 2,
        acceptErrors: 0,
        headerTimeouts: 3,
        idleTimeouts: 5,
      },
      {
        listener: "admin",
        open: 1,
        refused: 0,
        shed: 6,
        acceptErrors: 0,
        headerTimeouts: 0,
        idleTimeouts: 0,
      },
    ],
    quic: {
      handshakes: 3,
      receiveBufferBytes: 212992,
      rcvbufErrors: 47,
      socketDrops: 5,
      memorySteps: new Map([
        ["request", { count: 4, ms: 12 }],
        ["collect", { count: 1, ms: 150 }],
        ["settle", { count: 1, ms: 210 }],
        ["linger", { count: 0, ms: 0 }],
      ]),
    },
    rateLimits: [{ limit: "per-client", allowed: 9, limited: 4 }],
    pools: [{ pool: "api", retries: [["connect", 2], ["503", 5]], budgetExhausted: 3, pending: 1 }],
    websockets: m.websockets.snapshot(["api"]),
    upstreamConnections: [
      upstream("127.0.0.1:8080", "h2", { idle: 1 }),
      upstream("127.0.0.1:8080", "http1", { peer_closed: 2, protocol_error: 1 }),
    ],
    version: "1.2.3",
    uptimeSeconds: 5,
    startTimeSeconds: 1_700_000_000,
    residentBytes: 1024,
  };
}

/** One address's connections, with `closed` counts by reason (the others 0). */
function upstream(
  address: string,
  protocol: "h2" | "http1",
  closed: Partial<Record<UpstreamCloseReason, number>>,
): UpstreamConnectionsView {
  const all = Object.fromEntries(UPSTREAM_CLOSE_REASONS.map((r) => [r, closed[r] ?? 0]));
  const total = Object.values(all).reduce((a, b) => a + b, 0);
  return {
    address,
    protocol,
    opened: total + 2,
    connectFailures: 1,
    reused: 10,
    open: 2,
    closed: all as Record<UpstreamCloseReason, number>,
  };
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: string;
}

/** Families (from `# TYPE`) and samples of an exposition text. */
function parse(text: string): { families: Map<string, string>; samples: Sample[] } {
  const families = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) families.set(type[1], type[2]);
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: m[3] });
  }
  return { families, samples };
}

/** The family a sample belongs to (histogram series drop their suffix). */
function familyOf(name: string, families: Map<string, string>): string {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  assert.ok(families.has(base), `sample ${name} has no # TYPE`);
  return base;
}

Deno.test("prometheus: no family name repeats a word (was spooky_backend_backend_timeouts_total)", () => {
  const { families } = parse(renderPrometheus(view()));
  for (const name of families.keys()) {
    const words = name.split("_");
    for (let i = 1; i < words.length; i++) {
      assert.notEqual(words[i], words[i - 1], `doubled word in ${name}`);
    }
  }
  assert.ok(families.has("spooky_backend_timeouts_total"));
  assert.ok(!families.has("spooky_backend_backend_timeouts_total"));
});

Deno.test("prometheus: spooky_backend_* families, and only they, are per backend", () => {
  const { families, samples } = parse(renderPrometheus(view()));
  for (const s of samples) {
    const family = familyOf(s.name, families);
    const perBackend = family.startsWith("spooky_backend_");
    const perPool = family.startsWith("spooky_pool_");
    const perAddress = family.startsWith("spooky_upstream_");
    assert.equal("address" in s.labels, perAddress, `${s.name} ${JSON.stringify(s.labels)}`);
    assert.equal("protocol" in s.labels, perAddress, `${s.name} ${JSON.stringify(s.labels)}`);
    assert.equal("backend" in s.labels, perBackend, `${s.name} ${JSON.stringify(s.labels)}`);
    assert.equal(
      "pool" in s.labels,
      perBackend || perPool,
      `${s.name} ${JSON.stringify(s.labels)}`,
    );
  }
  for (const name of families.keys()) {
    if (name.startsWith("spooky_backend_")) {
      for (const id of ["a", "b"]) {
        assert.ok(samples.some((s) => s.name === name && s.labels.backend === id), `${name} ${id}`);
      }
    }
  }
});

Deno.test("prometheus: spooky_upstream_* families count each address's connections by protocol, closes by reason", () => {
  const { families, samples } = parse(renderPrometheus(view()));
  const value = (name: string, labels: Record<string, string>) =>
    samples.find((s) =>
      s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
    )?.value;
  const h1 = { address: "127.0.0.1:8080", protocol: "http1" };
  const h2 = { address: "127.0.0.1:8080", protocol: "h2" };
  assert.equal(families.get("spooky_upstream_connections_opened_total"), "counter");
  assert.equal(families.get("spooky_upstream_connections_open"), "gauge");
  assert.equal(value("spooky_upstream_connections_opened_total", h1), "5");
  assert.equal(value("spooky_upstream_connections_opened_total", h2), "3");
  assert.equal(value("spooky_upstream_connect_failures_total", h1), "1");
  assert.equal(value("spooky_upstream_connection_reuses_total", h2), "10");
  assert.equal(value("spooky_upstream_connections_open", h1), "2");
  assert.equal(
    value("spooky_upstream_connections_closed_total", { ...h1, reason: "peer_closed" }),
    "2",
  );
  assert.equal(
    value("spooky_upstream_connections_closed_total", { ...h1, reason: "protocol_error" }),
    "1",
  );
  assert.equal(value("spooky_upstream_connections_closed_total", { ...h2, reason: "idle" }), "1");
  // Every reason is shown for every address, 0 included.
  const closes = samples.filter((s) => s.name === "spooky_upstream_connections_closed_total");
  assert.equal(closes.length, 2 * UPSTREAM_CLOSE_REASONS.length);
});

Deno.test('prometheus: request counters carry a status-class label code="Nxx"', () => {
  const { samples } = parse(renderPrometheus(view()));
  const value = (name: string, labels: Record<string, string>) =>
    samples.find((s) =>
      s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) &&
      Object.keys(s.labels).length === Object.keys(labels).length
    )?.value;
  assert.equal(value("spooky_requests_total", { code: "2xx" }), "2");
  assert.equal(value("spooky_requests_total", { code: "3xx" }), "1");
  assert.equal(value("spooky_requests_total", { code: "4xx" }), "1");
  assert.equal(value("spooky_requests_total", { code: "5xx" }), "2");
  assert.equal(value("spooky_requests_total", { code: "1xx" }), undefined, "1xx only once seen");
  const a = { backend: "a", pool: "api" };
  assert.equal(value("spooky_backend_requests_total", { ...a, code: "2xx" }), "2");
  assert.equal(value("spooky_backend_requests_total", { ...a, code: "3xx" }), "1");
  assert.equal(value("spooky_backend_requests_total", { ...a, code: "5xx" }), "0");
  const b = { backend: "b", pool: "api" };
  assert.equal(value("spooky_backend_requests_total", { ...b, code: "5xx" }), "2");
  assert.equal(value("spooky_backend_timeouts_total", b), "1");
  assert.equal(value("spooky_backend_errors_total", b), "1");
  assert.equal(value("spooky_requests_success_total", {}), "2");
  assert.equal(value("spooky_requests_failure_total", {}), "4");
  for (const s of samples) {
    if (/requests_total$/.test(s.name)) assert.match(s.labels.code, /^[1-5]xx$/);
  }
});

Deno.test("prometheus: every family is in METRIC_FAMILIES and documented in docs/operations.md", async () => {
  const readme = await Deno.readTextFile(new URL("../../docs/operations.md", import.meta.url));
  const { families } = parse(renderPrometheus(view()));
  for (const name of families.keys()) {
    if (name.startsWith("spooky_")) assert.ok(name.slice(7) in METRIC_FAMILIES, name);
    assert.ok(readme.includes(`\`${name}\``), `docs/operations.md does not document ${name}`);
  }
});

Deno.test({
  ...needs("prometheus: promtool check metrics finds no problem", "promtool"),
  async fn() {
    const child = new Deno.Command("promtool", {
      args: ["check", "metrics"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(renderPrometheus(view())));
    await w.close();
    const out = await child.output();
    const msg = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, msg);
    assert.equal(msg.trim(), "", msg);
  },
});

Deno.test("prometheus: the QUIC socket's handshakes and UDP drop counters; a figure Linux does not give is left out", () => {
  const text = renderPrometheus(view());
  assert.match(text, /^spooky_quic_handshakes 3$/m);
  assert.match(text, /^spooky_quic_receive_buffer_bytes 212992$/m);
  assert.match(text, /^spooky_udp_receive_buffer_errors_total 47$/m);
  assert.match(text, /^spooky_quic_socket_drops_total 5$/m);
  const partial = renderPrometheus({ ...view(), quic: { handshakes: 0 } });
  assert.match(partial, /^spooky_quic_handshakes 0$/m);
  assert.doesNotMatch(partial, /^spooky_quic_socket_drops_total \d/m);
});

Deno.test("#35.7: prometheus: the collections and memory releases after churns of closed connections, by step, with their main-thread time", () => {
  const text = renderPrometheus(view());
  assert.match(text, /^# TYPE spooky_quic_memory_steps_total counter$/m);
  assert.match(text, /^spooky_quic_memory_steps_total\{step="request"\} 4$/m);
  assert.match(text, /^spooky_quic_memory_steps_total\{step="collect"\} 1$/m);
  assert.match(text, /^spooky_quic_memory_steps_total\{step="linger"\} 0$/m);
  assert.match(text, /^spooky_quic_memory_step_seconds_total\{step="settle"\} 0\.21$/m);
});

Deno.test("#35.3, #35.6: TCP listeners: connections shed for a newcomer and strangers on the fallback's internal listener are counted by reason", () => {
  const text = renderPrometheus(view());
  const rejected = "spooky_tcp_connections_rejected_total";
  assert.match(text, new RegExp(`^${rejected}\\{listener="tcp_fallback",reason="shed"\\} 4$`, "m"));
  assert.match(text, new RegExp(`^${rejected}\\{listener="admin",reason="shed"\\} 6$`, "m"));
  assert.match(
    text,
    new RegExp(`^${rejected}\\{listener="tcp_fallback",reason="not_relayed"\\} 2$`, "m"),
  );
  assert.doesNotMatch(
    text,
    /listener="admin",reason="not_relayed"/,
    "the admin listener relays nothing",
  );
  assert.match(text, /^spooky_tcp_connections_open\{listener="tcp_fallback"\} 7$/m);
});

Deno.test("#30.1: rate limits: allowed and limited requests counted per limit", () => {
  const text = renderPrometheus(view());
  assert.match(
    text,
    /^spooky_rate_limit_decisions_total\{limit="per-client",decision="allowed"\} 9$/m,
  );
  assert.match(
    text,
    /^spooky_rate_limit_decisions_total\{limit="per-client",decision="limited"\} 4$/m,
  );
});

Deno.test("#30.2: retries by reason, budget exhaustion, waiting requests per pool; in flight and overload refusals per backend", () => {
  const text = renderPrometheus(view());
  const lines = text.split("\n");
  for (
    const line of [
      'spooky_pool_retries_total{pool="api",reason="connect"} 2',
      'spooky_pool_retries_total{pool="api",reason="503"} 5',
      'spooky_pool_retry_budget_denied_total{pool="api"} 3',
      'spooky_pool_pending_requests{pool="api"} 1',
      'spooky_backend_inflight{backend="b",pool="api"} 4',
      'spooky_backend_inflight{backend="a",pool="api"} 0',
      'spooky_backend_overloaded_total{backend="b",pool="api",limit="max_inflight"} 6',
      'spooky_backend_overloaded_total{backend="b",pool="api",limit="max_pending"} 7',
      'spooky_backend_overloaded_total{backend="a",pool="api",limit="max_pending"} 0',
    ]
  ) assert.ok(lines.includes(line), `${line} in\n${text}`);
});

Deno.test("#29.2: prometheus: each pool's WebSockets open now, and attempts by outcome", () => {
  const text = renderPrometheus(view());
  assert.match(text, /^spooky_pool_websockets_open\{pool="api"\} 1$/m);
  assert.match(
    text,
    /^spooky_pool_websocket_sessions_total\{pool="api",outcome="idle_timeout"\} 1$/m,
  );
  assert.match(text, /^spooky_pool_websocket_sessions_total\{pool="api",outcome="refused"\} 1$/m);
  assert.match(text, /^spooky_pool_websocket_sessions_total\{pool="api",outcome="closed"\} 0$/m);
});
