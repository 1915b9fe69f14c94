/**
 * #31.3: the admin plane with roles, end to end with the real proxy
 * process: each role (and no token, and an unknown one) against each class
 * of endpoint; `admin.token` still the `admin` role; the audit log's lines
 * for mutating and refused calls; `admin.allow` checked on the TCP peer
 * before any credential (a list without 127.0.0.1 refuses even the admin
 * token); token files rotate on reload; no token in any output or the
 * audit log.
 */
import assert from "node:assert/strict";
import { startBackend } from "../support/backend.ts";
import { startProxy } from "../support/proxy_process.ts";
import { pollUntil } from "../support/wait.ts";

const TOKENS = {
  viewer: "viewer-token-0123456789ab",
  operator: "operator-token-0123456789",
  admin: "admin-token-0123456789abcd",
};
const LEGACY = "legacy-admin-token-0123456789";
const UNKNOWN = "unknown-token-0123456789ab";

async function tokenFolder(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "spooky-admin-roles-" });
  for (const [role, token] of Object.entries(TOKENS)) {
    await Deno.writeTextFile(`${dir}/${role}.token`, `${token}\n`);
  }
  return dir;
}

function config(backend: string, admin: string): string {
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
log: {level: debug}
upstream:
  web: {route: {path_prefix: /}, backends: [{id: b0, address: "${backend}"}]}
${admin}
`;
}

function adminWithRoles(dir: string, extra = ""): string {
  return `admin:
  port: 0
  token: ${LEGACY}
  tokens:
    - {token_file: ${dir}/viewer.token, role: viewer}
    - {token_file: ${dir}/operator.token, role: operator}
    - {token_file: ${dir}/admin.token, role: admin}
  audit_log: ${dir}/audit.jsonl
${extra}`;
}

/** One call of each endpoint class, in an order that leaves the proxy as it was. */
const CALLS: Array<
  { cls: "open" | "read" | "operate" | "reload"; method: string; path: string; body?: string }
> = [
  { cls: "open", method: "GET", path: "/health" },
  { cls: "open", method: "GET", path: "/metrics" },
  { cls: "read", method: "GET", path: "/admin/backends" },
  { cls: "read", method: "GET", path: "/admin/connections" },
  { cls: "operate", method: "POST", path: "/admin/backends/b0/disable" },
  { cls: "operate", method: "POST", path: "/admin/backends/b0/enable" },
  { cls: "operate", method: "PUT", path: "/admin/backends/b0/weight", body: '{"weight": 100}' },
  { cls: "reload", method: "POST", path: "/admin/reload" },
];

/** The status each caller gets for each class (drain is tested on its own: it stops the proxy). */
const EXPECTED: Record<string, Record<string, number>> = {
  none: { open: 200, read: 401, operate: 401, reload: 401 },
  unknown: { open: 200, read: 401, operate: 401, reload: 401 },
  viewer: { open: 200, read: 200, operate: 403, reload: 403 },
  operator: { open: 200, read: 200, operate: 200, reload: 403 },
  admin: { open: 200, read: 200, operate: 200, reload: 200 },
  legacy: { open: 200, read: 200, operate: 200, reload: 200 },
};

const TOKEN_OF: Record<string, string | undefined> = {
  none: undefined,
  unknown: UNKNOWN,
  ...TOKENS,
  legacy: LEGACY,
};

async function call(port: number, method: string, path: string, token?: string, body?: string) {
  const headers: Record<string, string> = token === undefined
    ? {}
    : { authorization: `Bearer ${token}` };
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, text, challenge: res.headers.get("www-authenticate") };
}

async function auditLines(dir: string): Promise<Array<Record<string, unknown>>> {
  const text = await Deno.readTextFile(`${dir}/audit.jsonl`).catch(() => "");
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

function assertNoSecret(texts: string[], secrets: string[]): void {
  const all = texts.join("\n");
  for (const s of secrets) assert.ok(!all.includes(s), `a token appears: ${s.slice(0, 10)}…`);
}

Deno.test("#31.3: admin roles: each role × each endpoint class; the audit log has every mutating and refused call", async () => {
  const dir = await tokenFolder();
  const backend = startBackend("b0");
  const proxy = await startProxy(config(backend.address, adminWithRoles(dir)));
  const port = proxy.adminPort!;
  try {
    for (const [caller, expected] of Object.entries(EXPECTED)) {
      for (const c of CALLS) {
        const r = await call(port, c.method, c.path, TOKEN_OF[caller], c.body);
        assert.equal(r.status, expected[c.cls], `${caller} ${c.method} ${c.path}: ${r.text}`);
        if (r.status === 401) assert.equal(r.challenge, 'Bearer realm="spooky-admin"');
        if (r.status === 403) assert.match(r.text, /"error":"forbidden".*needs (operator|admin)/);
      }
    }
    // Drain is the operator's: a viewer is refused, an operator starts it.
    assert.equal((await call(port, "POST", "/admin/drain", TOKENS.viewer)).status, 403);
    const metrics = (await call(port, "GET", "/metrics")).text;
    assert.match(metrics, /^spooky_admin_requests_total\{role="viewer",result="forbidden"\} 5$/m);
    assert.match(
      metrics,
      /^spooky_admin_requests_total\{role="none",result="unauthenticated"\} 12$/m,
    );
    assert.match(metrics, /^spooky_admin_requests_total\{role="operator",result="allowed"\} 5$/m);
    assert.equal((await call(port, "POST", "/admin/drain", TOKENS.operator)).status, 202);
    assert.equal(await proxy.exited, 0);

    const lines = await auditLines(dir);
    // Refused: none 6 + unknown 6 (reads included), viewer 4 + drain; allowed
    // mutating: operator 3, admin 4, legacy 4, and the drain.
    const byResult = (result: string) => lines.filter((l) => l.result === result).length;
    assert.equal(byResult("unauthenticated"), 12);
    assert.equal(byResult("forbidden"), 4 + 1 + 1);
    assert.equal(byResult("allowed"), 3 + 4 + 4 + 1);
    for (const l of lines) {
      assert.deepEqual(Object.keys(l), [
        "time",
        "role",
        "token_id",
        "source",
        "action",
        "target",
        "result",
        "status",
      ]);
      assert.equal(l.source, "127.0.0.1");
      assert.ok(!Number.isNaN(Date.parse(String(l.time))));
    }
    const disable = lines.find((l) =>
      l.token_id === "operator.token" && l.action === "backend.disable"
    );
    assert.deepEqual({ ...disable, time: undefined }, {
      time: undefined,
      role: "operator",
      token_id: "operator.token",
      source: "127.0.0.1",
      action: "backend.disable",
      target: "b0",
      result: "allowed",
      status: 200,
    });
    const refusedReload = lines.find((l) => l.role === "viewer" && l.action === "reload");
    assert.deepEqual(
      [refusedReload?.token_id, refusedReload?.result, refusedReload?.status],
      ["viewer.token", "forbidden", 403],
    );
    assert.ok(
      lines.some((l) => l.token_id === "admin.token" && l.action === "reload" && l.status === 200),
    );
    assert.ok(
      lines.some((l) =>
        l.token_id === null && l.result === "unauthenticated" && l.action === "read"
      ),
    );
    assert.ok(lines.some((l) => l.role === "operator" && l.action === "drain" && l.status === 202));
    assert.ok(
      !lines.some((l) => l.result === "allowed" && l.action === "read"),
      "allowed reads are not audited",
    );
    assertNoSecret(
      [...proxy.stdout, ...proxy.stderr, await Deno.readTextFile(`${dir}/audit.jsonl`)],
      [...Object.values(TOKENS), LEGACY, UNKNOWN],
    );
  } finally {
    await proxy.stop();
    await backend.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("#31.3: admin.allow is checked on the peer before any credential; allow and tokens apply on reload", async () => {
  const dir = await tokenFolder();
  const backend = startBackend("b0");
  // 10.0.0.0/8 excludes 127.0.0.1, the tests' own address.
  const refusing = config(backend.address, adminWithRoles(dir, "  allow: [10.0.0.0/8, fd00::/8]"));
  const proxy = await startProxy(refusing);
  const port = proxy.adminPort!;
  try {
    for (
      const [method, path, token] of [["GET", "/health"], ["GET", "/metrics"], [
        "POST",
        "/admin/reload",
        TOKENS.admin,
      ], ["GET", "/admin/backends", "garbage"]]
    ) {
      const r = await call(port, method!, path!, token);
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.match(
        r.text,
        /"error":"forbidden","message":"this address may not use the admin API"/,
      );
      assert.equal(r.challenge, null, "no credential asked for");
    }
    const lines = await auditLines(dir);
    assert.equal(lines.length, 4);
    for (const l of lines) {
      assert.deepEqual([l.result, l.status, l.role, l.token_id, l.source], [
        "address_refused",
        403,
        null,
        null,
        "127.0.0.1",
      ]);
    }
    // A reload (SIGHUP: the admin API refuses us) lets loopback in, and rotates a token.
    await Deno.writeTextFile(
      proxy.configPath,
      (await Deno.readTextFile(proxy.configPath)).replace(
        "allow: [10.0.0.0/8, fd00::/8]",
        "allow: [127.0.0.1/32]",
      ),
    );
    const rotated = "viewer-token-rotated-0123456";
    await Deno.writeTextFile(`${dir}/viewer.token`, rotated);
    const reloads = () => proxy.stderr.filter((l) => l.includes("configuration reloaded")).length;
    Deno.kill(proxy.pid, "SIGHUP");
    await pollUntil(() => reloads() === 1);
    assert.equal((await call(port, "GET", "/health")).status, 200);
    assert.equal(
      (await call(port, "GET", "/admin/backends", TOKENS.viewer)).status,
      401,
      "the old token is gone",
    );
    assert.equal((await call(port, "GET", "/admin/backends", rotated)).status, 200);
    assert.match(
      (await call(port, "GET", "/metrics")).text,
      /^spooky_admin_requests_total\{role="none",result="address_refused"\} 4$/m,
    );
    assertNoSecret(
      [...proxy.stdout, ...proxy.stderr, await Deno.readTextFile(`${dir}/audit.jsonl`)],
      [...Object.values(TOKENS), LEGACY, rotated],
    );
  } finally {
    assert.equal(await proxy.stop(), 0);
    await backend.close();
    await Deno.remove(dir, { recursive: true });
  }
});
