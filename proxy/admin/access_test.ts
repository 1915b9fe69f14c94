import assert from "node:assert/strict";
import { Hono } from "hono";
import type { AdminConfig } from "../config/types.ts";
import { action, adminAccessFollowing, adminAccessOf, AdminCounts, adminGuard } from "./access.ts";
import type { AuditEntry } from "./audit.ts";
import { parseAdminToken, requiredRole, roleAllows } from "./roles.ts";

const VIEWER = "viewer-0123456789abcdef";

Deno.test("#31.3: roles: each call's role; anything unknown under /admin/ is admin's", () => {
  assert.equal(requiredRole("GET", "/health"), null);
  assert.equal(requiredRole("GET", "/metrics"), null);
  assert.equal(requiredRole("POST", "/administrator"), null, "not under /admin/");
  assert.equal(requiredRole("GET", "/admin/backends"), "viewer");
  assert.equal(requiredRole("HEAD", "/admin/connections"), "viewer");
  assert.equal(requiredRole("POST", "/admin/backends/a%2Fb/disable"), "operator");
  assert.equal(requiredRole("POST", "/admin/backends/b0/enable"), "operator");
  assert.equal(requiredRole("PUT", "/admin/backends/b0/weight"), "operator");
  assert.equal(requiredRole("POST", "/admin/drain"), "operator");
  assert.equal(requiredRole("POST", "/admin/reload"), "admin");
  assert.equal(requiredRole("DELETE", "/admin/backends/b0"), "admin");
  assert.equal(requiredRole("POST", "/admin/backends/b0/weight"), "admin", "weight is a PUT");
  assert.ok(roleAllows("admin", "operator") && !roleAllows("operator", "admin"));
  assert.ok(roleAllows("viewer", null));
  assert.deepEqual(action("POST", "/admin/backends/a%2Fb/disable"), {
    action: "backend.disable",
    target: "a/b",
  });
});

Deno.test("#31.3: token files: one token of 16+ visible characters, kept as a digest", () => {
  const ok = parseAdminToken(`${VIEWER}\n`);
  assert.ok(ok.ok);
  assert.equal(ok.digest.length, 32);
  assert.ok(!parseAdminToken("\n").ok);
  assert.ok(!parseAdminToken("short").ok);
  assert.ok(!parseAdminToken(`${VIEWER}\n${VIEWER}`).ok, "a second line");
  assert.ok(!parseAdminToken("a token with spaces 0123").ok);
});

Deno.test("#31.3: access follows reloads, but a configuration without admin keeps the access in effect", () => {
  const viewer = parseAdminToken(VIEWER);
  assert.ok(viewer.ok);
  let current: {
    admin: AdminConfig | undefined;
    tokens: Array<{ id: string; role: "viewer"; digest: Uint8Array }>;
  } = {
    admin: {
      address: "127.0.0.1",
      port: 1,
      tokens: [],
      max_connections: 1,
      header_timeout_ms: 1,
      idle_timeout_ms: 1,
    } as unknown as AdminConfig,
    tokens: [{ id: "v.token", role: "viewer", digest: viewer.digest }],
  };
  const access = adminAccessFollowing(() => current);
  assert.equal(access().tokens.find(VIEWER)?.id, "v.token");
  const first = access();
  assert.equal(access(), first, "computed once per configuration");
  current = { admin: undefined, tokens: [] };
  assert.equal(access(), first, "no admin section: nothing opens up");
  assert.equal(access().open, false);
  assert.equal(adminAccessOf(undefined, []).open, true, "no token at all: open (loopback only)");
});

Deno.test("#31.3: an allow list with no peer address known refuses (fails closed), and audits it", async () => {
  const lines: AuditEntry[] = [];
  const app = new Hono();
  const counts = new AdminCounts();
  app.use(
    "*",
    adminGuard({
      access: () => adminAccessOf({ allow: ["127.0.0.1/32"] }, []),
      audit: { write: (e) => void lines.push(e) },
      counts,
    }),
  );
  app.get("/health", (c) => c.text("ok"));
  const refused = await app.fetch(new Request("http://x/health")); // no handler info: no peer
  assert.equal(refused.status, 403);
  const allowed = await app.fetch(new Request("http://x/health"), {
    remoteAddr: { hostname: "127.0.0.1", port: 1, transport: "tcp" },
  });
  assert.equal(allowed.status, 200);
  assert.deepEqual(lines.map((l) => [l.result, l.source]), [["address_refused", "unknown"]]);
});
