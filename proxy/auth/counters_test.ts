import assert from "node:assert/strict";
import { AdminCounts } from "../admin/access.ts";
import { ProxyMetrics } from "../metrics/metrics.ts";
import { type MetricsView, renderPrometheus } from "../metrics/prometheus.ts";
import { AuthCounters } from "./counters.ts";

function view(auth: AuthCounters, admin: AdminCounts): MetricsView {
  const m = new ProxyMetrics();
  return {
    global: m.global,
    backends: [],
    latency: m.latency.snapshot(),
    activeConnections: 0,
    activeStreams: 0,
    auth: auth.snapshot([["api", ["api_key", "jwt"]], ["keys-only", ["api_key"]]]),
    admin: admin.snapshot(),
    version: "0.0.0",
    uptimeSeconds: 1,
    startTimeSeconds: 1,
    residentBytes: 1,
  };
}

Deno.test("#31.2, #31.3: auth and admin decisions: every possible series shown, zeros included", () => {
  const auth = new AuthCounters();
  auth.of("api").count("jwt", "allowed");
  auth.of("api").count("jwt", "allowed");
  auth.of("api").count("none", "missing");
  auth.of("gone").count("jwt", "allowed"); // a pool no longer configured is not shown
  const admin = new AdminCounts();
  admin.count("viewer", "forbidden");
  admin.count(null, "address_refused");
  const text = renderPrometheus(view(auth, admin));
  const lines = text.split("\n").filter((l) => /^spooky_(auth|admin)_/.test(l));
  assert.deepEqual(lines, [
    'spooky_auth_decisions_total{pool="api",method="none",result="missing"} 1',
    'spooky_auth_decisions_total{pool="api",method="api_key",result="allowed"} 0',
    'spooky_auth_decisions_total{pool="api",method="api_key",result="invalid_request"} 0',
    'spooky_auth_decisions_total{pool="api",method="api_key",result="invalid_token"} 0',
    'spooky_auth_decisions_total{pool="api",method="jwt",result="allowed"} 2',
    'spooky_auth_decisions_total{pool="api",method="jwt",result="invalid_request"} 0',
    'spooky_auth_decisions_total{pool="api",method="jwt",result="invalid_token"} 0',
    'spooky_auth_decisions_total{pool="api",method="jwt",result="insufficient_scope"} 0',
    'spooky_auth_decisions_total{pool="keys-only",method="none",result="missing"} 0',
    'spooky_auth_decisions_total{pool="keys-only",method="api_key",result="allowed"} 0',
    'spooky_auth_decisions_total{pool="keys-only",method="api_key",result="invalid_request"} 0',
    'spooky_auth_decisions_total{pool="keys-only",method="api_key",result="invalid_token"} 0',
    'spooky_admin_requests_total{role="none",result="address_refused"} 1',
    'spooky_admin_requests_total{role="none",result="unauthenticated"} 0',
    'spooky_admin_requests_total{role="viewer",result="allowed"} 0',
    'spooky_admin_requests_total{role="viewer",result="forbidden"} 1',
    'spooky_admin_requests_total{role="operator",result="allowed"} 0',
    'spooky_admin_requests_total{role="operator",result="forbidden"} 0',
    'spooky_admin_requests_total{role="admin",result="allowed"} 0',
    'spooky_admin_requests_total{role="admin",result="forbidden"} 0',
  ]);
});

Deno.test({
  name: "#31.2, #31.3: promtool accepts the auth and admin families",
  ignore: !Deno.env.get("PATH")?.split(":").some((d) => {
    try {
      return Deno.statSync(`${d}/promtool`).isFile;
    } catch {
      return false;
    }
  }),
  async fn() {
    const child = new Deno.Command("promtool", {
      args: ["check", "metrics"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const w = child.stdin.getWriter();
    const auth = new AuthCounters();
    auth.of("api").count("api_key", "invalid_token");
    await w.write(new TextEncoder().encode(renderPrometheus(view(auth, new AdminCounts()))));
    await w.close();
    const out = await child.output();
    const msg = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, msg);
    assert.equal(msg.trim(), "", msg);
  },
});
