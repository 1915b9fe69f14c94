import { MalformedMessageError } from "./errors.ts";
import { BodyLengthTracker, validateRequestFields, validateTrailerFields } from "./message.ts";
import assert from "node:assert/strict";
import { assertMalformed } from "./_test_util.ts";

type F = Array<[string, string]>;
const GET: F = [[":method", "GET"], [":scheme", "https"], [":authority", "example.com"], [
  ":path",
  "/a?b=c",
]];
const req = (...extra: F): F => [...GET, ...extra];

Deno.test("RFC 9114 §4.3.1: a valid GET request", () => {
  const head = validateRequestFields(req(["accept", "*/*"], ["x-a", "1"]));
  assert.deepEqual(head, {
    method: "GET",
    scheme: "https",
    authority: "example.com",
    path: "/a?b=c",
    fields: [["accept", "*/*"], ["x-a", "1"]],
  });
});

Deno.test("RFC 9114 §4.2: uppercase field names are malformed", () => {
  assertMalformed(() => validateRequestFields(req(["Accept", "x"])), "Accept");
  assertMalformed(() => validateTrailerFields([["X-Trailer", "x"]]), "X-Trailer");
});

Deno.test("RFC 9114 §4.2/§10.3: field names must be tokens", () => {
  for (const name of ["a b", "a:b", "", "caf\u00e9", "a\0", "x(y)"]) {
    assertMalformed(() => validateRequestFields(req([name, "v"])), name);
  }
  validateRequestFields(req(["!#$%&'*+-.^_`|~09az", "v"]));
});

Deno.test("RFC 9114 §10.3: field values with NUL, CR or LF are malformed", () => {
  for (const v of ["a\0b", "a\rb", "a\nb", "\r\n"]) {
    assertMalformed(() => validateRequestFields(req(["x-v", v])), "x-v");
  }
  assertMalformed(() => validateRequestFields([[":method", "GET\n"], ...GET.slice(1)]), ":method");
  validateRequestFields(req(["x-v", "tab\tinside, obs-text \u00ff"]), {});
  validateRequestFields(req(["x-empty", ""]));
});

Deno.test("RFC 9110 §5.5: field values with control characters other than HTAB are malformed", () => {
  for (const v of ["a\x01b", "bell\x07", "esc\x1b[0m", "del\x7f", "a\x0bb"]) {
    assertMalformed(() => validateRequestFields(req(["x-v", v])), "x-v");
  }
});

Deno.test("RFC 9110 §5.5: field values with leading or trailing whitespace are malformed", () => {
  for (const v of [" a", "a ", "\ta", "a\t"]) {
    assertMalformed(() => validateRequestFields(req(["x-v", v])), "x-v");
  }
});

Deno.test("RFC 9114 §4.3: pseudo-header fields after regular fields are malformed", () => {
  assertMalformed(
    () => validateRequestFields([...GET.slice(0, 3), ["accept", "*/*"], [":path", "/"]]),
    ":path",
  );
});

Deno.test("RFC 9114 §4.3.1: repeated pseudo-header fields are malformed", () => {
  for (const name of [":method", ":scheme", ":authority", ":path"]) {
    const dup = GET.find(([n]) => n === name)!;
    assertMalformed(() => validateRequestFields([...GET, dup]), name);
  }
});

Deno.test("RFC 9114 §4.3: unknown or response pseudo-headers in a request are malformed", () => {
  assertMalformed(() => validateRequestFields(req([":status", "200"]).slice(0, 5)), ":status");
  assertMalformed(() => validateRequestFields([...GET, [":foo", "x"]]), ":foo");
});

Deno.test("RFC 9114 §4.3.1: :method, :scheme and :path are required outside CONNECT", () => {
  for (const name of [":method", ":scheme", ":path"]) {
    assertMalformed(() => validateRequestFields(GET.filter(([n]) => n !== name)), name);
  }
});

Deno.test("RFC 9114 §4.3.1: :path must not be empty", () => {
  assertMalformed(() => validateRequestFields([...GET.slice(0, 3), [":path", ""]]), ":path");
});

Deno.test('RFC 9114 §4.3.1: :path "*" is only for OPTIONS', () => {
  const star: F = [[":scheme", "https"], [":authority", "a"], [":path", "*"]];
  assert.equal(validateRequestFields([[":method", "OPTIONS"], ...star]).path, "*");
  assertMalformed(() => validateRequestFields([[":method", "GET"], ...star]), ":path");
});

Deno.test('RFC 9114 §4.3.1: an http(s) :path must start with "/"', () => {
  assertMalformed(() => validateRequestFields([...GET.slice(0, 3), [":path", "a/b"]]), ":path");
});

Deno.test("RFC 9114 §4.3.1: http/https requests need :authority or host", () => {
  const noAuth = GET.filter(([n]) => n !== ":authority");
  assertMalformed(() => validateRequestFields(noAuth), ":authority");
  const withHost = validateRequestFields([...noAuth, ["host", "example.com"]]);
  assert.equal(withHost.authority, undefined);
  assert.deepEqual(withHost.fields, [["host", "example.com"]]);
});

Deno.test("RFC 9114 §4.3.1: :authority and host must not be empty", () => {
  assertMalformed(
    () => validateRequestFields([...GET.slice(0, 2), [":authority", ""], [":path", "/"]]),
    ":authority",
  );
  assertMalformed(
    () => validateRequestFields([...GET.filter(([n]) => n !== ":authority"), ["host", ""]]),
    "host",
  );
});

Deno.test("RFC 9114 §4.3.1: :authority and host must match when both are present", () => {
  validateRequestFields(req(["host", "example.com"]));
  assertMalformed(() => validateRequestFields(req(["host", "other.example"])), "host");
});

Deno.test("RFC 9114 §4.3.1: :authority must not carry userinfo", () => {
  assertMalformed(
    () => validateRequestFields([...GET.slice(0, 2), [":authority", "u:p@h"], [":path", "/"]]),
    ":authority",
  );
});

Deno.test("RFC 9114 §4.3.1: non-http schemes do not need an authority", () => {
  const h = validateRequestFields([[":method", "GET"], [":scheme", "urn"], [":path", "x"]]);
  assert.equal(h.scheme, "urn");
  assertMalformed(
    () => validateRequestFields([[":method", "GET"], [":scheme", "1bad"], [":path", "/"]]),
    ":scheme",
  );
});

Deno.test("RFC 9114 §4.4: CONNECT needs :authority and no :scheme or :path", () => {
  const h = validateRequestFields([[":method", "CONNECT"], [":authority", "example.com:443"]]);
  assert.deepEqual(h, { method: "CONNECT", authority: "example.com:443", fields: [] });
  assertMalformed(() => validateRequestFields([[":method", "CONNECT"]]), ":authority");
  assertMalformed(
    () =>
      validateRequestFields([[":method", "CONNECT"], [":authority", "a:1"], [":scheme", "https"]]),
    ":scheme",
  );
  assertMalformed(
    () => validateRequestFields([[":method", "CONNECT"], [":authority", "a:1"], [":path", "/"]]),
    ":path",
  );
});

Deno.test("RFC 9220 §3: :protocol only with extended CONNECT enabled, and then needs :scheme, :path, :authority", () => {
  const ws: F = [[":method", "CONNECT"], [":protocol", "websocket"], [":scheme", "https"], [
    ":authority",
    "a",
  ], [":path", "/chat"]];
  assertMalformed(() => validateRequestFields(ws), ":protocol");
  const h = validateRequestFields(ws, { allowExtendedConnect: true });
  assert.equal(h.protocol, "websocket");
  assert.equal(h.path, "/chat");
  assertMalformed(
    () => validateRequestFields(ws.filter(([n]) => n !== ":path"), { allowExtendedConnect: true }),
    ":path",
  );
  assertMalformed(
    () =>
      validateRequestFields([[":method", "GET"], ...ws.slice(1)], { allowExtendedConnect: true }),
    ":protocol",
  );
});

Deno.test("RFC 9114 §4.2: connection-specific fields are malformed", () => {
  for (
    const name of ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]
  ) {
    assertMalformed(() => validateRequestFields(req([name, "x"])), name);
    assertMalformed(() => validateTrailerFields([[name, "x"]]), name);
  }
});

Deno.test('RFC 9114 §4.2: TE other than "trailers" is malformed', () => {
  validateRequestFields(req(["te", "trailers"]));
  assertMalformed(() => validateRequestFields(req(["te", "gzip"])), "te");
  assertMalformed(() => validateRequestFields(req(["te", "trailers, deflate"])), "te");
});

Deno.test("RFC 9114 §4.1.2: content-length must be a non-negative integer", () => {
  assert.equal(validateRequestFields(req(["content-length", "0"])).contentLength, 0);
  assert.equal(validateRequestFields(req(["content-length", "1234"])).contentLength, 1234);
  for (const v of ["-1", "1.5", "abc", "", "0x10", "+5", "99999999999999999999"]) {
    assertMalformed(() => validateRequestFields(req(["content-length", v])), "content-length");
  }
});

Deno.test("RFC 9110 §8.6: repeated identical content-length values merge; differing ones are malformed", () => {
  assert.equal(
    validateRequestFields(req(["content-length", "5"], ["content-length", "5"])).contentLength,
    5,
  );
  assert.equal(validateRequestFields(req(["content-length", "5, 5"])).contentLength, 5);
  assertMalformed(
    () => validateRequestFields(req(["content-length", "5"], ["content-length", "6"])),
    "content-length",
  );
  assertMalformed(() => validateRequestFields(req(["content-length", "5, 6"])), "content-length");
});

Deno.test("RFC 9114 §4.3.1: method must be a token", () => {
  assertMalformed(() => validateRequestFields([[":method", "G T"], ...GET.slice(1)]), ":method");
  assertMalformed(() => validateRequestFields([[":method", ""], ...GET.slice(1)]), ":method");
});

Deno.test("RFC 9114 §4.3: trailers must not contain pseudo-headers", () => {
  assert.deepEqual(validateTrailerFields([["x-checksum", "abc"]]), [["x-checksum", "abc"]]);
  assertMalformed(() => validateTrailerFields([[":path", "/"]]), ":path");
  assertMalformed(() => validateTrailerFields([["x-a", "b\n"]]), "x-a");
});

Deno.test("RFC 9110 §6.5.1: fields needed before the content are refused in trailers", () => {
  const ok: Array<[string, string]> = [["grpc-status", "0"], ["x-checksum", "abc"], [
    "server-timing",
    "db;dur=5",
  ]];
  assert.deepEqual(validateTrailerFields(ok), ok);
  for (
    const name of [
      "content-length",
      "transfer-encoding",
      "host",
      "authorization",
      "proxy-authorization",
      "cache-control",
      "content-type",
      "content-encoding",
      "trailer",
      "if-match",
      "if-none-match",
      "range",
      "expect",
      "max-forwards",
    ]
  ) {
    assertMalformed(() => validateTrailerFields([["x-ok", "1"], [name, "1"]]), name);
  }
  // TE: trailers is allowed in a request head, never in trailers.
  assertMalformed(() => validateTrailerFields([["te", "trailers"]]), "te");
});

Deno.test("RFC 9114 §4.1.2: body longer than content-length is malformed", () => {
  const t = new BodyLengthTracker(10);
  t.add(4);
  t.add(6);
  t.finish();
  assert.equal(t.received, 10);
  const e = assertMalformed(() => t.add(1), "content-length");
  assert.ok(e instanceof MalformedMessageError);
});

Deno.test("RFC 9114 §4.1.2: body shorter than content-length is malformed", () => {
  const t = new BodyLengthTracker(10);
  t.add(9);
  assertMalformed(() => t.finish(), "content-length");
  const none = new BodyLengthTracker();
  none.add(1e9);
  none.finish();
});

Deno.test("RFC 3986 §3.2: an authority that is not host[:port] makes the request malformed", () => {
  const req = (authority: string) =>
    [
      [":method", "GET"],
      [":scheme", "https"],
      [":authority", authority],
      [":path", "/"],
    ] as Array<[string, string]>;
  for (
    const ok of [
      "example.com",
      "example.com:443",
      "[::1]:9889",
      "127.0.0.1",
      "a-b.c_d~e",
      "h%41st:1",
    ]
  ) {
    assert.equal(validateRequestFields(req(ok)).authority, ok, ok);
  }
  for (
    const bad of [
      "localhost:6093o",
      "localhos\u00f4:1",
      "host:443;",
      "a b",
      "host:123456",
      "[zz]",
      "h/p",
      'x"y',
    ]
  ) {
    assert.throws(() => validateRequestFields(req(bad)), MalformedMessageError, bad);
  }
  const withHost: Array<[string, string]> = [[":method", "GET"], [":scheme", "https"], [
    ":path",
    "/",
  ], ["host", "a.test:1x"]];
  assert.throws(() => validateRequestFields(withHost), MalformedMessageError);
});
