import assert from "node:assert/strict";
import { base64url } from "jose";
import { jwksText, signToken, testKeys } from "./_test_keys.ts";
import { parseJwks } from "./jwks.ts";
import { jwtPolicy, verifyJwt } from "./jwt.ts";

Deno.test("#31.2: jwks: the four openssl keys load; each verifies its own token", async () => {
  const keys = await testKeys();
  const all = Object.values(keys);
  const parsed = await parseJwks(jwksText(all), ["RS256", "ES256", "EdDSA", "HS256"]);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  assert.equal(parsed.keys.size, 4);
  const policy = jwtPolicy({
    keys: parsed.keys,
    algorithms: ["RS256", "ES256", "EdDSA", "HS256"],
    issuers: [],
    audiences: [],
    clockSkewS: 0,
    requiredClaims: {},
  });
  for (const key of all) {
    const outcome = await verifyJwt(await signToken(key), policy);
    assert.ok(outcome.ok, `${key.alg}: ${JSON.stringify(outcome)}`);
  }
});

Deno.test("#31.2: jwks: keys for algorithms not configured are left out; none left is a problem", async () => {
  const keys = await testKeys();
  const parsed = await parseJwks(jwksText([keys.RS256, keys.HS256]), ["RS256"]);
  assert.ok(parsed.ok);
  assert.equal(parsed.keys.size, 1, "the oct key serves HS256 only, not configured");
  const none = await parseJwks(jwksText([keys.HS256]), ["RS256", "ES256"]);
  assert.ok(!none.ok);
  assert.match(none.message, /holds no key usable with the algorithms RS256, ES256/);
});

Deno.test("#31.2: jwks: what cannot be used is a problem naming the key, never its material", async () => {
  const keys = await testKeys();
  const shortSecret = { kty: "oct", kid: "short", k: base64url.encode(new Uint8Array(16)) };
  const privateRsa = { ...keys.RS256.jwk, d: "AQAB" };
  const broken = { ...keys.RS256.jwk, n: "x" };
  const cases: Array<[string, RegExp]> = [
    ["not json", /is not JSON/],
    ['{"kty": "RSA"}', /is not a JSON Web Key Set/],
    ['{"keys": [1]}', /keys\[0\]: is not a JSON object/],
    [
      JSON.stringify({ keys: [keys.RS256.jwk, privateRsa] }),
      /keys\[1\] \(kid "rs256-1"\): holds a private key/,
    ],
    [
      JSON.stringify({ keys: [shortSecret] }),
      /keys\[0\] \(kid "short"\): an HS256 key must have at least 32 bytes/,
    ],
    [
      JSON.stringify({ keys: [broken] }),
      /keys\[0\] \(kid "rs256-1"\): cannot be imported as RS256/,
    ],
  ];
  for (const [text, message] of cases) {
    const parsed = await parseJwks(text, ["RS256", "ES256", "HS256"]);
    assert.ok(!parsed.ok, text);
    assert.match(parsed.message, message);
    assert.ok(!parsed.message.includes(shortSecret.k));
  }
});
