/**
 * #31.2: edge authentication end to end: a real proxy process in front of a
 * real backend that records what it sees. Refused requests (401, 403) never
 * reach the backend; admitted ones carry the forwarded claim and never the
 * client's copy of it; keys and key sets rotate with SIGHUP and
 * `POST /admin/reload`, a broken file keeps the previous keys; `/metrics`
 * counts every decision; no key or token appears in the proxy's output.
 */
import assert from "node:assert/strict";
import { jwksText, signToken, testKeys } from "../../proxy/auth/_test_keys.ts";
import { startBackend } from "../support/backend.ts";
import { getHead } from "../support/faults.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { metricValue, scrapeMetrics } from "../support/metrics.ts";
import { pollUntil } from "../support/wait.ts";

const KEY_1 = "key-one-0123456789abcdef";
const KEY_2 = "key-two-fedcba9876543210";
const ISSUER = "https://id.example";
const AUDIENCE = "payments";

Deno.test("#31.2: edge auth: 401/403 never reach the backend; claims forwarded, spoofs stripped; keys rotate on reload; nothing secret logged", async () => {
  const keys = await testKeys();
  const dir = await Deno.makeTempDir({ prefix: "spooky-edge-auth-" });
  await Deno.writeTextFile(`${dir}/keys.txt`, `${KEY_1}\n`);
  await Deno.writeTextFile(`${dir}/jwks.json`, jwksText([keys.ES256]));
  const be = startBackend("api");
  const certs = await testCerts();
  const proxy = await startProxy(`version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
log: {level: debug}
upstream:
  api:
    route: {path_prefix: /api}
    auth:
      api_keys: {header: x-api-key, keys_file: ${dir}/keys.txt}
      jwt:
        jwks_file: ${dir}/jwks.json
        algorithms: [ES256, EdDSA]
        issuers: ["${ISSUER}"]
        audiences: [${AUDIENCE}]
        required_claims: [tenant]
        forward_claims: {sub: x-user-id}
    backends: [{id: b0, address: "${be.address}"}]
  free:
    route: {path_prefix: /free}
    backends: [{id: b1, address: "${be.address}"}]
admin: {port: 0}
`);
  const client = await H3TestClient.connect(proxy.port, await Deno.readTextFile(certs.caPath));
  const get = (path: string, fields: Array<[string, string]> = []) =>
    client.request({ head: [...getHead(path, proxy.port), ...fields] });
  const field = (res: { headers: Array<[string, string]> }, name: string) =>
    res.headers.find(([n]) => n === name)?.[1];
  const seen = () => be.seen.map((r) => new URL(r.url).pathname);
  const token = (
    key = keys.ES256,
    claims: Record<string, unknown> = { sub: "user-7", tenant: "t1" },
    expiresIn = 300,
  ) => signToken(key, { issuer: ISSUER, audience: AUDIENCE, claims, expiresIn });
  const metric = async (labels: string) =>
    metricValue(await scrapeMetrics(proxy.adminPort!), `spooky_auth_decisions_total{${labels}}`);
  const secrets: string[] = [KEY_1, KEY_2];
  try {
    const missing = await get("/api/missing");
    assert.equal(missing.status, 401);
    assert.equal(field(missing, "www-authenticate"), 'Bearer realm="api"');
    assert.equal(field(missing, "content-type"), "application/json");
    assert.equal(JSON.parse(new TextDecoder().decode(missing.body)).error, "unauthorized");

    const wrongKey = await get("/api/wrong-key", [["x-api-key", `${KEY_1}-not`]]);
    assert.equal(wrongKey.status, 401);
    assert.match(field(wrongKey, "www-authenticate")!, /error="invalid_token"/);

    const expired = await token(keys.ES256, { sub: "u", tenant: "t1" }, -3600);
    secrets.push(expired);
    assert.equal((await get("/api/expired", [["authorization", `Bearer ${expired}`]])).status, 401);
    const noTenant = await token(keys.ES256, { sub: "u" });
    secrets.push(noTenant);
    const forbidden = await get("/api/no-tenant", [["authorization", `Bearer ${noTenant}`]]);
    assert.equal(forbidden.status, 403);
    assert.match(field(forbidden, "www-authenticate")!, /error="insufficient_scope"/);
    assert.deepEqual(seen(), [], "no refused request reached the backend");

    const byKey = await get("/api/headers", [["x-api-key", KEY_1], ["x-user-id", "admin"]]);
    assert.equal(byKey.status, 200);
    const keyHeaders = JSON.parse(new TextDecoder().decode(byKey.body));
    assert.equal(keyHeaders["x-api-key"], KEY_1, "the credential is forwarded by default");
    assert.equal(keyHeaders["x-user-id"], undefined, "the client's copy is stripped");

    const good = await token();
    secrets.push(good);
    const byJwt = await get("/api/headers", [["authorization", `Bearer ${good}`], [
      "x-user-id",
      "admin",
    ]]);
    assert.equal(byJwt.status, 200);
    const jwtHeaders = JSON.parse(new TextDecoder().decode(byJwt.body));
    assert.equal(jwtHeaders["x-user-id"], "user-7", "the sub claim, not the client's copy");
    assert.equal((await get("/free/x")).status, 200, "a pool without auth is open");
    assert.deepEqual(seen(), ["/api/headers", "/api/headers", "/free/x"]);

    assert.equal(await metric('pool="api",method="none",result="missing"'), 1);
    assert.equal(await metric('pool="api",method="api_key",result="invalid_token"'), 1);
    assert.equal(await metric('pool="api",method="api_key",result="allowed"'), 1);
    assert.equal(await metric('pool="api",method="jwt",result="invalid_token"'), 1);
    assert.equal(await metric('pool="api",method="jwt",result="insufficient_scope"'), 1);
    assert.equal(await metric('pool="api",method="jwt",result="allowed"'), 1);
    assert.equal(await metric('pool="free",method="none",result="missing"'), undefined);

    // Rotation by SIGHUP: the new key works, the old one no longer does.
    await Deno.writeTextFile(`${dir}/keys.txt`, `${KEY_2}\n`);
    const reloads = () => proxy.stderr.filter((l) => l.includes("configuration reloaded")).length;
    Deno.kill(proxy.pid, "SIGHUP");
    await pollUntil(() => reloads() === 1);
    assert.equal(reloads(), 1, proxy.stderr.join("\n"));
    assert.equal((await get("/api/old-key", [["x-api-key", KEY_1]])).status, 401);
    assert.equal((await get("/api/new-key", [["x-api-key", KEY_2]])).status, 200);

    // Rotation of the key set by the admin API: ES256 out, EdDSA in.
    await Deno.writeTextFile(`${dir}/jwks.json`, jwksText([keys.EdDSA]));
    const reload = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    assert.deepEqual(await reload.json(), { reloaded: true, restart_required: [] });
    const rotated = await token(keys.EdDSA);
    secrets.push(rotated);
    assert.equal((await get("/api/old-kid", [["authorization", `Bearer ${good}`]])).status, 401);
    assert.equal((await get("/api/new-kid", [["authorization", `Bearer ${rotated}`]])).status, 200);

    // A broken keys file rejects the reload; the keys in effect keep serving.
    await Deno.writeTextFile(`${dir}/keys.txt`, `${KEY_1}\nnot a key\n`);
    const rejected = await fetch(`http://127.0.0.1:${proxy.adminPort}/admin/reload`, {
      method: "POST",
    });
    assert.equal(rejected.status, 400);
    assert.deepEqual((await rejected.json()).errors, [
      `upstream.api.auth.api_keys.keys_file (line 8): ${dir}/keys.txt line 2: a key may hold only visible ASCII characters (no spaces or control characters)`,
    ]);
    assert.equal((await get("/api/kept", [["x-api-key", KEY_2]])).status, 200);
    assert.equal((await get("/api/not-yet", [["x-api-key", KEY_1]])).status, 401);
  } finally {
    await client.close();
    assert.equal(await proxy.stop(), 0);
    await be.close();
    await Deno.remove(dir, { recursive: true });
  }
  const output = [...proxy.stdout, ...proxy.stderr].join("\n");
  assert.ok(output.includes("refused") || output.includes("401"), "the log has the refusals");
  for (const secret of secrets) {
    assert.ok(
      !output.includes(secret),
      `a secret appears in the proxy's output: ${secret.slice(0, 12)}…`,
    );
  }
});
