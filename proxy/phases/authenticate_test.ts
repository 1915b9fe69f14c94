import assert from "node:assert/strict";
import { ApiKeySet, parseApiKeys } from "../auth/api_keys.ts";
import {
  confusedToken,
  jwksText,
  signToken,
  testKeys,
  unsecuredToken,
} from "../auth/_test_keys.ts";
import { AuthCounters } from "../auth/counters.ts";
import { parseJwks } from "../auth/jwks.ts";
import type { AuthConfig, JwtAlgorithm, JwtAuthConfig } from "../config/types.ts";
import { type ConfigSecrets, NO_SECRETS } from "../config/secrets.ts";
import type { IncomingRequest, OutgoingResponse } from "../server/types.ts";
import { type AuthDecision, authenticate, compilePoolAuth, type PoolAuth } from "./authenticate.ts";

const API_KEY = "k-0123456789abcdef-right";
const ISSUER = "https://id.example";
const AUDIENCE = "payments";

function request(fields: Array<[string, string]>): IncomingRequest {
  return {
    head: { method: "GET", scheme: "https", authority: "api.test", path: "/x", fields },
    body: null,
    remote: { hostname: "192.0.2.7", port: 5000 },
    signal: new AbortController().signal,
  };
}

function jwtConfig(extra: Partial<JwtAuthConfig> = {}): JwtAuthConfig {
  return {
    jwks_file: "/unused",
    algorithms: ["RS256", "ES256", "EdDSA", "HS256"],
    issuers: [ISSUER],
    audiences: [AUDIENCE],
    clock_skew_s: 5,
    required_claims: {},
    forward_claims: {},
    ...extra,
  };
}

/** A pool `api` with `auth`, its keys loaded as the loader would. */
async function poolAuth(
  auth: AuthConfig,
  algorithms: readonly JwtAlgorithm[] = ["RS256", "ES256", "EdDSA", "HS256"],
  counters = new AuthCounters(),
): Promise<PoolAuth> {
  const keys = await testKeys();
  const jwks = await parseJwks(jwksText(Object.values(keys)), algorithms);
  assert.ok(jwks.ok);
  const apiKeys = parseApiKeys(API_KEY);
  assert.ok(apiKeys.ok);
  const secrets: ConfigSecrets = {
    ...NO_SECRETS,
    apiKeys: new Map([["api", apiKeys.keys]]),
    jwtKeys: new Map([["api", jwks.keys]]),
  };
  return compilePoolAuth("api", auth, secrets, counters)!;
}

async function decide(auth: PoolAuth, fields: Array<[string, string]>): Promise<AuthDecision> {
  return await authenticate(request(fields), auth);
}

function refusal(d: AuthDecision): { status: number; challenge: string; body: unknown } {
  assert.ok(!d.ok, "refused");
  const res: OutgoingResponse = d.response;
  const headers = [...res.headers];
  return {
    status: res.status,
    challenge: headers.find(([n]) => n === "www-authenticate")?.[1] ?? "",
    body: JSON.parse(new TextDecoder().decode(res.body as Uint8Array)),
  };
}

const bearer = (token: string): [string, string] => ["authorization", `Bearer ${token}`];

Deno.test("#31.2: jwt: a token of each openssl key (RS256, ES256, EdDSA, HS256) is admitted", async () => {
  const keys = await testKeys();
  const auth = await poolAuth({ jwt: jwtConfig(), forward_credentials: true });
  for (const key of Object.values(keys)) {
    const token = await signToken(key, { issuer: ISSUER, audience: AUDIENCE });
    const d = await decide(auth, [bearer(token)]);
    assert.ok(d.ok, `${key.alg}: ${JSON.stringify(!d.ok && refusal(d))}`);
  }
  assert.equal(auth.counts.get("jwt", "allowed"), 4);
});

Deno.test("#31.2: jwt: expired, not yet valid, wrong audience or issuer, no exp: 401 invalid_token", async () => {
  const { ES256 } = await testKeys();
  const auth = await poolAuth({ jwt: jwtConfig(), forward_credentials: true });
  const ok = { issuer: ISSUER, audience: AUDIENCE };
  const cases: Array<[string, Parameters<typeof signToken>[1], RegExp]> = [
    ["expired (past the 5 s skew)", { ...ok, expiresIn: -60 }, /has expired/],
    ["not yet valid", { ...ok, notBeforeIn: 60 }, /not valid yet/],
    ["wrong audience", { ...ok, audience: "billing" }, /aud claim is not accepted/],
    ["no audience", { issuer: ISSUER }, /aud claim/],
    ["wrong issuer", { ...ok, issuer: "https://evil.example" }, /iss claim is not accepted/],
    ["no exp", { ...ok, expiresIn: null }, /no exp claim/],
  ];
  for (const [what, opts, description] of cases) {
    const r = refusal(await decide(auth, [bearer(await signToken(ES256, opts))]));
    assert.equal(r.status, 401, what);
    assert.match(r.challenge, /^Bearer realm="api", error="invalid_token", error_description="/);
    assert.match(r.challenge, description, what);
    assert.deepEqual((r.body as { error: string }).error, "invalid_token");
  }
  // Within the skew, an expired token still passes.
  assert.ok((await decide(auth, [bearer(await signToken(ES256, { ...ok, expiresIn: -2 }))])).ok);
});

Deno.test("#31.2: jwt: alg none, RS256→HS256 confusion, a kid not in the set, a bad signature, garbage: 401", async () => {
  const { RS256, HS256 } = await testKeys();
  // HS256 allowed and an oct key in the set: the confusion still fails,
  // because an HMAC key is only ever an oct key of the set.
  const auth = await poolAuth({ jwt: jwtConfig(), forward_credentials: true });
  const claims = { sub: "attacker", iss: ISSUER, aud: AUDIENCE };
  const good = await signToken(RS256, { issuer: ISSUER, audience: AUDIENCE });
  const [h, p] = good.split(".");
  const cases: Array<[string, string, RegExp]> = [
    ["alg none", unsecuredToken({ ...claims, exp: 9999999999 }), /algorithm is not accepted/],
    ["RS256→HS256 confusion", await confusedToken(RS256, claims), /no key of the key set matches/],
    [
      "kid not in the set",
      await signToken(RS256, { issuer: ISSUER, audience: AUDIENCE, kid: "rotated-away" }),
      /no key of the key set matches/,
    ],
    [
      "HS256 signed with another secret",
      await signToken({ ...HS256, signingKey: new Uint8Array(32).fill(7) }, {
        issuer: ISSUER,
        audience: AUDIENCE,
      }),
      /signature does not verify/,
    ],
    [
      "payload swapped",
      `${h}.${btoa('{"sub":"admin"}').replaceAll("=", "")}.${good.split(".")[2]}`,
      /./,
    ],
    ["signature stripped", `${h}.${p}.`, /./],
    ["not a JWT", "not-a-jwt", /malformed/],
  ];
  for (const [what, token, description] of cases) {
    const r = refusal(await decide(auth, [bearer(token)]));
    assert.equal(r.status, 401, what);
    assert.match(r.challenge, /error="invalid_token"/, what);
    assert.match(r.challenge, description, what);
  }
  assert.equal(auth.counts.get("jwt", "invalid_token"), cases.length);
  assert.equal(auth.counts.get("jwt", "allowed"), 0);
});

Deno.test("#31.2: jwt: an algorithm not configured is refused even with a key in the set", async () => {
  const { RS256, ES256 } = await testKeys();
  const auth = await poolAuth({
    jwt: jwtConfig({ algorithms: ["ES256"] }),
    forward_credentials: true,
  }, [
    "ES256",
  ]);
  const rs = await signToken(RS256, { issuer: ISSUER, audience: AUDIENCE });
  assert.match(refusal(await decide(auth, [bearer(rs)])).challenge, /algorithm is not accepted/);
  assert.ok(
    (await decide(auth, [bearer(await signToken(ES256, { issuer: ISSUER, audience: AUDIENCE }))]))
      .ok,
  );
});

Deno.test("#31.2: missing or malformed credentials: 401, an error code only when one was offered", async () => {
  const auth = await poolAuth({ jwt: jwtConfig(), forward_credentials: true });
  const missing = refusal(await decide(auth, []));
  assert.equal(missing.status, 401);
  assert.equal(
    missing.challenge,
    'Bearer realm="api"',
    "RFC 6750 §3.1: no error code without a credential",
  );
  assert.deepEqual(missing.body, { error: "unauthorized", message: "a bearer token is required" });
  assert.equal(
    refusal(await decide(auth, [["authorization", "Basic dXNlcjpwYXNz"]])).challenge,
    'Bearer realm="api"',
  );
  for (
    const fields of [
      [["authorization", "Bearer"]],
      [["authorization", "Bearer a b"]],
      [bearer("a.b.c"), bearer("d.e.f")],
    ] as Array<Array<[string, string]>>
  ) {
    const r = refusal(await decide(auth, fields));
    assert.equal(r.status, 401);
    assert.match(r.challenge, /error="invalid_request"/, JSON.stringify(fields));
  }
  assert.equal(auth.counts.get("none", "missing"), 2);
  assert.equal(auth.counts.get("jwt", "invalid_request"), 3);
});

Deno.test("#31.2: required claims: a valid token without one is 403 insufficient_scope", async () => {
  const { EdDSA } = await testKeys();
  const auth = await poolAuth({
    jwt: jwtConfig({ required_claims: { tenant: null, scope: "payments:write" } }),
    forward_credentials: true,
  });
  const sign = (claims: Record<string, unknown>) =>
    signToken(EdDSA, { issuer: ISSUER, audience: AUDIENCE, claims });
  const noTenant = refusal(await decide(auth, [bearer(await sign({ scope: "payments:write" }))]));
  assert.equal(noTenant.status, 403);
  assert.match(
    noTenant.challenge,
    /error="insufficient_scope", error_description="the token has no tenant claim"/,
  );
  const lowScope = refusal(
    await decide(auth, [bearer(await sign({ tenant: "t1", scope: "payments:read" }))]),
  );
  assert.equal(lowScope.status, 403);
  assert.deepEqual((lowScope.body as { error: string }).error, "insufficient_scope");
  // A space-separated scope, or a list, holding the value passes.
  assert.ok(
    (await decide(auth, [bearer(await sign({ tenant: "t1", scope: "a payments:write" }))])).ok,
  );
  assert.ok(
    (await decide(auth, [bearer(await sign({ tenant: "t1", scope: ["payments:write"] }))])).ok,
  );
  assert.equal(auth.counts.get("jwt", "insufficient_scope"), 2);
});

Deno.test("#31.2: forwarded claims are set, client copies always stripped; credentials forwarded unless told", async () => {
  const { RS256 } = await testKeys();
  const forward = { sub: "x-user-id", roles: "x-user-roles" };
  const token = await signToken(RS256, {
    issuer: ISSUER,
    audience: AUDIENCE,
    claims: { sub: "user-7", roles: ["a", "b"] },
  });
  const spoofed: Array<[string, string]> = [["x-user-id", "admin"], ["x-user-roles", "root"], [
    "accept",
    "*/*",
  ]];
  const auth = await poolAuth({
    api_keys: { header: "x-api-key", keys_file: "/unused" },
    jwt: jwtConfig({ forward_claims: forward }),
    forward_credentials: true,
  });
  const viaJwt = await decide(auth, [...spoofed, bearer(token)]);
  assert.ok(viaJwt.ok);
  assert.deepEqual(viaJwt.req.head.fields, [
    ["accept", "*/*"],
    bearer(token),
    ["x-user-id", "user-7"],
    ["x-user-roles", '["a","b"]'],
  ]);
  // Admitted by an API key: no claims, and the spoofed copies still go.
  const viaKey = await decide(auth, [...spoofed, ["x-api-key", API_KEY]]);
  assert.ok(viaKey.ok);
  assert.deepEqual(viaKey.req.head.fields, [["accept", "*/*"], ["x-api-key", API_KEY]]);

  const stripping = await poolAuth({
    api_keys: { header: "x-api-key", keys_file: "/unused" },
    jwt: jwtConfig(),
    forward_credentials: false,
  });
  const stripped = await decide(stripping, [["accept", "*/*"], bearer(token)]);
  assert.ok(stripped.ok);
  assert.deepEqual(stripped.req.head.fields, [["accept", "*/*"]]);
  const keyStripped = await decide(stripping, [["x-api-key", API_KEY], ["accept", "*/*"]]);
  assert.ok(keyStripped.ok);
  assert.deepEqual(keyStripped.req.head.fields, [["accept", "*/*"]]);
});

Deno.test("#31.2: a claim that is no valid field value is not forwarded (and its client copy is still gone)", async () => {
  const { RS256 } = await testKeys();
  const auth = await poolAuth({
    jwt: jwtConfig({ forward_claims: { sub: "x-user-id" } }),
    forward_credentials: false,
  });
  const token = await signToken(RS256, {
    issuer: ISSUER,
    audience: AUDIENCE,
    claims: { sub: "a\r\nx-evil: 1" },
  });
  const d = await decide(auth, [["x-user-id", "admin"], bearer(token)]);
  assert.ok(d.ok);
  assert.deepEqual(d.req.head.fields, []);
});

Deno.test("#31.2: api keys: right admitted, wrong 401 invalid_token (whatever else is sent), two 401 invalid_request, none 401", async () => {
  const { RS256 } = await testKeys();
  const auth = await poolAuth({
    api_keys: { header: "x-api-key", keys_file: "/unused" },
    jwt: jwtConfig(),
    forward_credentials: true,
  });
  const right = await decide(auth, [["x-api-key", API_KEY]]);
  assert.ok(right.ok);
  assert.equal(right.req.head.fields.length, 1, "nothing to change: the same fields");
  const good = await signToken(RS256, { issuer: ISSUER, audience: AUDIENCE });
  const wrong = refusal(await decide(auth, [["x-api-key", `${API_KEY}x`], bearer(good)]));
  assert.equal(wrong.status, 401);
  assert.match(
    wrong.challenge,
    /error="invalid_token", error_description="the API key is not accepted"/,
  );
  const two = refusal(await decide(auth, [["x-api-key", API_KEY], ["x-api-key", API_KEY]]));
  assert.match(two.challenge, /error="invalid_request"/);
  const none = refusal(await decide(auth, []));
  assert.equal(none.challenge, 'Bearer realm="api"');
  assert.match((none.body as { message: string }).message, /x-api-key/);
  assert.deepEqual(
    [
      auth.counts.get("api_key", "allowed"),
      auth.counts.get("api_key", "invalid_token"),
      auth.counts.get("api_key", "invalid_request"),
      auth.counts.get("none", "missing"),
    ],
    [1, 1, 1, 1],
  );
});

Deno.test("#31.2: a pool whose keys were not loaded refuses everything (fails closed)", async () => {
  const auth = compilePoolAuth(
    "api",
    { api_keys: { header: "x-api-key", keys_file: "/unused" }, forward_credentials: true },
    NO_SECRETS,
    new AuthCounters(),
  )!;
  assert.equal(refusal(await decide(auth, [["x-api-key", API_KEY]])).status, 401);
  assert.equal(new ApiKeySet(new Map()).matches(""), false);
});

Deno.test("#31.2: a pool without auth compiles to null (no work per request)", () => {
  assert.equal(compilePoolAuth("free", undefined, NO_SECRETS, new AuthCounters()), null);
});
