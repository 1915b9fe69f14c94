/**
 * #31.2, #31.3, #31.4: the keys of edge authentication, admin roles and
 * backend client certificates: the schema's problems with their key path
 * and line, and the files they name read and checked by `loadConfig` (the
 * problem at the key naming the file, with the file's own line), the paths
 * resolved against the configuration's folder.
 */
import assert from "node:assert/strict";
import { ensureDevCerts } from "../../shared/certs/generate.ts";
import { jwksText, testKeys } from "../auth/_test_keys.ts";
import { formatProblem, loadConfig } from "./load.ts";
import { problems } from "./_test_util.ts";

const KEY = "k-0123456789abcdef-ok";
const TOKEN = "t-0123456789abcdef-viewer";

/** A folder with listener certificates, a client certificate pair (openssl, signed by the dev CA) and key files. */
async function folder(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "spooky-auth-cfg-" });
  const certs = await ensureDevCerts(`${dir}/certs`);
  const run = async (args: string[]) => {
    const out = await new Deno.Command("openssl", { args, cwd: dir, stderr: "piped" }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
  };
  await run([
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-subj",
    "/CN=spooky-client",
    "-keyout",
    "client-key.pem",
    "-out",
    "client.csr",
  ]);
  await run([
    "x509",
    "-req",
    "-in",
    "client.csr",
    "-CA",
    certs.caPath,
    "-CAkey",
    `${dir}/certs/ca-key.pem`,
    "-CAcreateserial",
    "-days",
    "2",
    "-out",
    "client.pem",
  ]);
  await Deno.writeTextFile(`${dir}/keys.txt`, `# keys\n${KEY}\n`);
  await Deno.writeTextFile(`${dir}/jwks.json`, jwksText([(await testKeys()).ES256]));
  await Deno.writeTextFile(`${dir}/viewer.token`, `${TOKEN}\n`);
  return dir;
}

/** A configuration (lines numbered in comments) with `extra` in pool `api` and `admin` at the end. */
function yaml(pool: string[], admin: string[] = [], backend = "{id: a, address: 127.0.0.1:8081}") {
  return [
    "version: 1", // 1
    "listen: {protocol: http3, tls: {cert: certs/cert.pem, key: certs/key.pem}}", // 2
    "upstream:", // 3
    "  api:", // 4
    "    route: {path_prefix: /}", // 5
    `    backends: [${backend}]`, // 6
    ...pool.map((l) => `    ${l}`), // 7…
    ...admin,
    "",
  ].join("\n");
}

async function load(dir: string, text: string) {
  await Deno.writeTextFile(`${dir}/proxy.yaml`, text);
  return await loadConfig(`${dir}/proxy.yaml`);
}

async function problemLines(dir: string, text: string): Promise<string[]> {
  const r = await load(dir, text);
  assert.ok(!r.ok && r.kind === "invalid", JSON.stringify(r));
  return r.problems.map(formatProblem);
}

Deno.test("#31.2: auth: keys and JWKS are read from files next to the configuration, hashed", async () => {
  const dir = await folder();
  try {
    const r = await load(
      dir,
      yaml([
        "auth:",
        "  api_keys: {keys_file: keys.txt}",
        "  jwt: {jwks_file: jwks.json, algorithms: [ES256]}",
      ]),
    );
    assert.ok(r.ok, JSON.stringify(r));
    const auth = r.config.upstream.api.auth!;
    assert.equal(auth.api_keys!.keys_file, `${dir}/keys.txt`);
    assert.equal(auth.api_keys!.header, "x-api-key");
    assert.equal(auth.jwt!.jwks_file, `${dir}/jwks.json`);
    assert.ok(r.secrets!.apiKeys.get("api")!.matches(KEY));
    assert.equal(r.secrets!.jwtKeys.get("api")!.size, 1);
    assert.ok(!JSON.stringify([...r.secrets!.apiKeys.values()]).includes(KEY));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("#31.2: auth: a bad keys file or JWKS is a problem at its key and line, with the file's line", async () => {
  const dir = await folder();
  try {
    await Deno.writeTextFile(`${dir}/bad-keys.txt`, `${KEY}\nnot ok key\n`);
    await Deno.writeTextFile(`${dir}/bad.json`, '{"keys": []}');
    assert.deepEqual(
      await problemLines(
        dir,
        yaml([
          "auth:", // 7
          "  api_keys: {keys_file: bad-keys.txt}", // 8
          "  jwt:", // 9
          "    jwks_file: bad.json", // 10
        ]),
      ),
      [
        `upstream.api.auth.api_keys.keys_file (line 8): ${dir}/bad-keys.txt line 2: a key may hold only visible ASCII characters (no spaces or control characters)`,
        `upstream.api.auth.jwt.jwks_file (line 10): ${dir}/bad.json holds no key usable with the algorithms RS256, ES256, EdDSA`,
      ],
    );
    assert.deepEqual(
      await problemLines(dir, yaml(["auth:", "  api_keys: {keys_file: /dev/zero}"])),
      ["upstream.api.auth.api_keys.keys_file (line 8): /dev/zero is a character device, not a regular file"],
    );
    assert.deepEqual(
      await problemLines(dir, yaml(["auth:", "  jwt: {jwks_file: missing.json}"])),
      [`upstream.api.auth.jwt.jwks_file (line 8): file not found: ${dir}/missing.json`],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("#31.2: auth: the schema names each wrong key with its path and line", () => {
  const head = [
    "version: 1",
    "listen: {protocol: http3, tls: {cert: c.pem, key: k.pem}}",
    "upstream:",
    "  api:",
    "    route: {path_prefix: /}",
    "    backends: [{id: a, address: 127.0.0.1:8081}]",
  ];
  const at = (lines: string[]) =>
    problems([...head, ...lines, ""].join("\n")).map((p) =>
      `${p.path} (line ${p.line}): ${p.message}`
    );
  assert.deepEqual(at(["    auth: {}"]), [
    "upstream.api.auth (line 7): needs api_keys, jwt or both",
  ]);
  assert.deepEqual(at(["    auth:", "      jwt: {jwks_file: j.json, algorithms: [none, HS512]}"]), [
    "upstream.api.auth.jwt.algorithms[0] (line 8): must be one of RS256, ES256, EdDSA, HS256",
    "upstream.api.auth.jwt.algorithms[1] (line 8): must be one of RS256, ES256, EdDSA, HS256",
  ]);
  assert.deepEqual(
    at([
      "    auth:",
      "      jwt:",
      "        jwks_file: j.json",
      "        forward_claims: {sub: Content-Length}",
    ]),
    [
      "upstream.api.auth.jwt.forward_claims.sub (line 10): is connection-specific, frames the message or routes it: it cannot be a forwarded claim",
    ],
  );
  assert.deepEqual(at(["    auth:", "      api_keys: {keys_file: k.txt, header: Authorization}"]), [
    "upstream.api.auth.api_keys.header (line 8): is the JWT's field: give API keys a field of their own (x-api-key)",
  ]);
  assert.deepEqual(at(["    auth:", "      jwt: {jwks_file: j.json, clock_skew: 5}"]), [
    "upstream.api.auth.jwt.clock_skew (line 8): unknown key (did you mean `clock_skew_s`?)",
  ]);
  assert.deepEqual(at(["    auth:", '      jwt: {jwks_file: j.json, required_claims: ["a b"]}']), [
    "upstream.api.auth.jwt.required_claims[0] (line 8): must be a claim name: 1 to 64 letters, digits, _ . : or -",
  ]);
});

Deno.test("#31.3: admin tokens: read from their files; a bad or shared token is a problem at its key and line", async () => {
  const dir = await folder();
  try {
    const ok = await load(
      dir,
      yaml([], [
        "admin:",
        "  port: 0",
        "  tokens:",
        "    - {token_file: viewer.token, role: viewer}",
      ]),
    );
    assert.ok(ok.ok, JSON.stringify(ok));
    assert.deepEqual(ok.secrets!.adminTokens.map((t) => [t.id, t.role]), [[
      "viewer.token",
      "viewer",
    ]]);
    await Deno.writeTextFile(`${dir}/short.token`, "abc\n");
    await Deno.writeTextFile(`${dir}/copy.token`, TOKEN);
    assert.deepEqual(
      await problemLines(
        dir,
        yaml([], [
          "admin:", // 7
          "  port: 0", // 8
          `  token: ${TOKEN}`, // 9
          "  tokens:", // 10
          "    - {token_file: short.token, role: operator}", // 11
          "    - {token_file: copy.token, role: viewer}", // 12
          "    - {token_file: viewer.token, role: boss}", // 13
          "  allow: [10.0.0.0/33]", // 14
        ]),
      ),
      [
        "admin.tokens[2].role (line 13): must be one of viewer, operator, admin",
        "admin.allow[0] (line 14): must be an IPv4 or IPv6 address or CIDR such as 10.0.0.0/8 or fd00::/8 (prefix length 33 is above 32 for IPv4)",
      ],
    );
    assert.deepEqual(
      await problemLines(
        dir,
        yaml([], [
          "admin:", // 7
          "  port: 0", // 8
          `  token: ${TOKEN}`, // 9
          "  tokens:", // 10
          "    - {token_file: short.token, role: operator}", // 11
          "    - {token_file: copy.token, role: viewer}", // 12
        ]),
      ),
      [
        `admin.tokens[0].token_file (line 11): ${dir}/short.token the token is shorter than 16 characters (too easy to guess)`,
        "admin.tokens[1].token_file (line 12): holds the same token as admin.token: each token has one role",
      ],
    );
    // `admin.tokens` stands for `admin.token` on an address others can reach.
    const reachable = await load(
      dir,
      yaml([], [
        "admin:",
        "  address: 0.0.0.0",
        "  port: 0",
        "  tokens: [{token_file: viewer.token, role: viewer}]",
      ]),
    );
    assert.ok(reachable.ok, JSON.stringify(reachable));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("#31.4: backend client certificate: read as a pair; a key of another certificate is refused at tls.key", async () => {
  const dir = await folder();
  try {
    const pair = "{id: a, address: 127.0.0.1:8443, tls: {cert: client.pem, key: client-key.pem}}";
    const ok = await load(dir, yaml([], [], pair));
    assert.ok(ok.ok, JSON.stringify(ok));
    assert.deepEqual(ok.config.upstream.api.backends[0].tls, {
      cert: `${dir}/client.pem`,
      key: `${dir}/client-key.pem`,
    });
    const cert = ok.secrets!.clientCertificates.get("a")!;
    assert.match(cert.cert, /BEGIN CERTIFICATE/);
    assert.match(cert.fingerprint, /^[0-9a-f]{16}$/);
    assert.deepEqual(
      await problemLines(
        dir,
        yaml(
          [],
          [],
          "{id: a, address: 127.0.0.1:8443, tls: {cert: client.pem, key: certs/key.pem}}",
        ),
      ),
      ["upstream.api.backends[0].tls.key (line 6): does not match tls.cert"],
    );
    assert.deepEqual(
      await problemLines(
        dir,
        yaml([], [], "{id: a, address: 127.0.0.1:8443, tls: {cert: client.pem}}"),
      ),
      ["upstream.api.backends[0].tls.cert (line 6): needs tls.key too (a client certificate and its key go together)"],
    );
    assert.deepEqual(
      await problemLines(
        dir,
        yaml(
          [],
          [],
          "{id: a, address: 127.0.0.1:8443, tls: {cert: client-key.pem, key: client-key.pem}}",
        ),
      ),
      [`upstream.api.backends[0].tls.cert (line 6): ${dir}/client-key.pem is not a PEM certificate (no -----BEGIN CERTIFICATE----- block)`],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
