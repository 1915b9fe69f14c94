/**
 * #30.5: the lookups of a backend's host name and the addresses it resolves
 * to, per backend (0 lookups and 1 address for an IP address), promtool-clean.
 */
import assert from "node:assert/strict";
import { needs } from "../../tests/support/tools.ts";
import { ProxyMetrics } from "./metrics.ts";
import { type MetricsView, renderPrometheus } from "./prometheus.ts";

function view(): MetricsView {
  const m = new ProxyMetrics();
  const backend = (id: string, dns?: MetricsView["backends"][number]["dns"]) => ({
    id,
    pool: "api",
    counters: m.backend(id),
    healthy: true,
    enabled: true,
    weight: 100,
    picks: 0,
    dns,
  });
  return {
    global: m.global,
    backends: [
      backend("named", { success: 7, failure: 2, endpoints: ["10.0.0.1:80", "[fd00::1]:80"] }),
      backend("literal"),
    ],
    latency: m.latency.snapshot(),
    activeConnections: 0,
    activeStreams: 0,
    version: "1.2.3",
    uptimeSeconds: 1,
    startTimeSeconds: 1_700_000_000,
    residentBytes: 1,
  };
}

Deno.test("#30.5: /metrics: spooky_backend_dns_lookups_total and spooky_backend_addresses per backend", () => {
  const text = renderPrometheus(view());
  const named = 'backend="named",pool="api"';
  const literal = 'backend="literal",pool="api"';
  assert.match(
    text,
    new RegExp(`^spooky_backend_dns_lookups_total\\{${named},result="success"\\} 7$`, "m"),
  );
  assert.match(
    text,
    new RegExp(`^spooky_backend_dns_lookups_total\\{${named},result="failure"\\} 2$`, "m"),
  );
  assert.match(
    text,
    new RegExp(`^spooky_backend_dns_lookups_total\\{${literal},result="success"\\} 0$`, "m"),
  );
  assert.match(text, new RegExp(`^spooky_backend_addresses\\{${named}\\} 2$`, "m"));
  assert.match(text, new RegExp(`^spooky_backend_addresses\\{${literal}\\} 1$`, "m"));
});

Deno.test({
  ...needs("#30.5: /metrics with hostname backends passes promtool check metrics", "promtool"),
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
