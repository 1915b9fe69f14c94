import assert from "node:assert/strict";
import fc from "fast-check";
import type { RequestHead } from "../http/mod.ts";
import { encodeChunk, encodeLastChunk, type RequestBody, serializeRequestHead } from "./request.ts";
import { bytes, crlf, cutAt, run } from "./_test_util.ts";

const text = (b: Uint8Array | string) => typeof b === "string" ? b : String.fromCharCode(...b);

function head(over: Partial<RequestHead> = {}): RequestHead {
  return {
    method: "GET",
    scheme: "https",
    authority: "a.example",
    path: "/p?q=1",
    fields: [],
    ...over,
  };
}

function serialize(h: RequestHead, body: RequestBody = { kind: "none" }): string {
  const out = serializeRequestHead(h, body);
  assert.ok(typeof out !== "string", out as string);
  return text(out);
}

function refusal(h: RequestHead, body: RequestBody = { kind: "none" }): string {
  const out = serializeRequestHead(h, body);
  assert.equal(typeof out, "string", `expected a refusal, got ${JSON.stringify(text(out))}`);
  return out as string;
}

Deno.test("RFC 9112 §3: the request line and Host from :authority", () => {
  const fields: Array<[string, string]> = [["accept", "*/*"], ["x-id", "7"]];
  assert.equal(
    serialize(head({ fields })),
    crlf("GET /p?q=1 HTTP/1.1\nhost: a.example\naccept: */*\nx-id: 7\n\n"),
  );
});

Deno.test("RFC 9112 §3.2: Host from the host field without :authority, else empty; never twice", () => {
  const withHost = head({ authority: undefined, fields: [["host", "b.example"]] });
  assert.equal(serialize(withHost), crlf("GET /p?q=1 HTTP/1.1\nhost: b.example\n\n"));
  assert.equal(serialize(head({ authority: undefined })), crlf("GET /p?q=1 HTTP/1.1\nhost: \n\n"));
  const both = head({ fields: [["host", "a.example"]] });
  assert.equal(serialize(both), crlf("GET /p?q=1 HTTP/1.1\nhost: a.example\n\n"));
});

Deno.test("RFC 9112 §3.2: origin-form (/ when no path), authority-form for CONNECT", () => {
  assert.match(serialize(head({ path: undefined })), /^GET \/ HTTP\/1\.1\r\n/);
  const connect = head({ method: "CONNECT", scheme: undefined, path: undefined });
  assert.match(serialize(connect), /^CONNECT a\.example HTTP\/1\.1\r\n/);
});

Deno.test("RFC 9110 §7.6.1: connection-specific, hop-by-hop and Connection-named fields are not sent", () => {
  const fields: Array<[string, string]> = [
    ["connection", "x-hop"],
    ["x-hop", "1"],
    ["keep-alive", "timeout=5"],
    ["proxy-connection", "keep-alive"],
    ["transfer-encoding", "chunked"],
    ["upgrade", "h2c"],
    ["trailer", "x-t"],
    ["proxy-authorization", "Basic x"],
    ["content-length", "99"],
    ["x-end", "2"],
  ];
  assert.equal(
    serialize(head({ fields })),
    crlf("GET /p?q=1 HTTP/1.1\nhost: a.example\nx-end: 2\n\n"),
  );
});

Deno.test("RFC 9112 §6.2, §6.1: Content-Length when the length is known, chunked when not, none for none", () => {
  const post = head({ method: "POST", fields: [["content-length", "1"]] });
  assert.match(serialize(post, { kind: "length", length: 12 }), /\r\ncontent-length: 12\r\n\r\n$/);
  assert.match(serialize(post, { kind: "length", length: 0 }), /\r\ncontent-length: 0\r\n\r\n$/);
  assert.match(serialize(post, { kind: "chunked" }), /\r\ntransfer-encoding: chunked\r\n\r\n$/);
  assert.doesNotMatch(serialize(post), /content-length|transfer-encoding/);
  assert.match(refusal(post, { kind: "length", length: -1 }), /invalid content length/);
  assert.match(refusal(post, { kind: "length", length: 1.5 }), /invalid content length/);
});

Deno.test("RFC 9110 §10.1.4: TE: trailers is sent, with Connection: TE, only when the client sent it", () => {
  const asked = serialize(head({ fields: [["te", "trailers"]] }));
  assert.equal(
    asked,
    crlf("GET /p?q=1 HTTP/1.1\nhost: a.example\nte: trailers\nconnection: te\n\n"),
  );
  assert.doesNotMatch(serialize(head({ fields: [["te", "gzip"]] })), /te:/i);
  assert.doesNotMatch(serialize(head()), /te:/i);
});

Deno.test("RFC 9110 §5.5: CR, LF or NUL in a field value is refused, not sent (request smuggling)", () => {
  for (const v of ["a\r\nx-evil: 1", "a\nb", "a\rb", "a\0b", "a\x01b", " lead", "\u0100"]) {
    assert.ok(refusal(head({ fields: [["x", v]] })).length > 0, JSON.stringify(v));
  }
  // Even in a field that would have been dropped.
  assert.match(refusal(head({ fields: [["keep-alive", "a\r\nb"]] })), /NUL, CR or LF/);
  assert.match(refusal(head({ fields: [["x y", "1"]] })), /invalid field name/);
  assert.match(refusal(head({ fields: [["x:\r\ny", "1"]] })), /invalid field name/);
});

Deno.test("RFC 9112 §3: a method, target or Host that would break the request line is refused", () => {
  assert.match(refusal(head({ method: "GET /x HTTP/1.1\r\n" })), /invalid method/);
  for (const path of ["/a b", "/a\r\nx: 1", "/a\0", "/\u00e9", "/a\tb"]) {
    assert.match(refusal(head({ path })), /invalid request target/, JSON.stringify(path));
  }
  assert.match(refusal(head({ authority: "a.example\r\nx: 1" })), /invalid host/);
  assert.match(refusal(head({ authority: undefined, fields: [["host", "a b"]] })), /invalid host/);
});

Deno.test("RFC 9112 §7.1: the chunk encoder: size in hex, data, CRLF; empty data is no chunk", () => {
  assert.equal(text(encodeChunk(bytes("hello world!!!!!"))), "10\r\nhello world!!!!!\r\n");
  assert.equal(encodeChunk(new Uint8Array(0)).length, 0);
});

Deno.test("RFC 9112 §7.1.2: the last chunk carries the trailers allowed there; malformed ones are refused", () => {
  assert.equal(text(encodeLastChunk() as Uint8Array), "0\r\n\r\n");
  const sent = encodeLastChunk([["x-sum", "1"], ["content-length", "2"], ["if-match", "x"], [
    "x-b",
    "2",
  ]]);
  assert.equal(text(sent as Uint8Array), "0\r\nx-sum: 1\r\nx-b: 2\r\n\r\n");
  assert.match(encodeLastChunk([["x", "a\r\nb"]]) as string, /trailers: NUL, CR or LF/);
});

Deno.test("RFC 9112 §7.1: what the chunk encoder writes, the parser reads back, however cut (fast-check)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 8 }),
      fc.array(fc.tuple(fc.constantFrom("x-a", "x-b"), fc.stringMatching(/^[!-~]{1,8}$/)), {
        maxLength: 3,
      }),
      fc.array(fc.nat({ max: 2000 }), { maxLength: 10 }),
      (chunks, trailers, cuts) => {
        const parts = [bytes("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")];
        for (const c of chunks) parts.push(encodeChunk(c));
        parts.push(encodeLastChunk(trailers) as Uint8Array);
        const wire = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        parts.reduce((at, p) => (wire.set(p, at), at + p.length), 0);
        const s = run("GET", cutAt(wire, cuts));
        assert.equal(s.body, chunks.map(text).join(""));
        const t = s.events.find((e) => e.type === "trailers");
        assert.deepEqual(t?.type === "trailers" ? t.fields : [], trailers);
        assert.equal(s.reusable, true);
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("RFC 9110 §7.8: an upgrade writes its own Connection and Upgrade, the client's are dropped", () => {
  const fields: Array<[string, string]> = [
    ["connection", "upgrade"],
    ["upgrade", "h2c"],
    ["sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="],
  ];
  const out = serializeRequestHead(head({ fields }), { kind: "none" }, "websocket");
  assert.ok(typeof out !== "string", out as string);
  assert.equal(
    text(out),
    crlf(
      "GET /p?q=1 HTTP/1.1\nhost: a.example\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\n" +
        "connection: upgrade\nupgrade: websocket\n\n",
    ),
  );
  assert.match(
    serializeRequestHead(head(), { kind: "none" }, "web socket") as string,
    /invalid upgrade protocol/,
  );
});
