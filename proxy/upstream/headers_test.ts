import assert from "node:assert/strict";
import { downstreamResponseFields, upstreamRequestHeaderList } from "./headers.ts";

const upstreamRequestHeaders = (...args: Parameters<typeof upstreamRequestHeaderList>) =>
  new Headers(upstreamRequestHeaderList(...args));

Deno.test("upstream headers: connection-specific fields dropped, forwarding fields added", () => {
  const h = upstreamRequestHeaders(
    [["accept", "*/*"], ["connection", "x"], ["x-forwarded-for", "10.0.0.1"], ["via", "1.1 cdn"]],
    { ip: "127.0.0.1", authority: "example.com:9889", trusted: true },
  );
  assert.equal(h.get("connection"), null);
  // The authority travels as :authority / the codec's Host, never as a field
  // too (nginx refuses an HTTP/2 request with both: "duplicate host header").
  assert.equal(h.get("host"), null);
  assert.equal(h.get("x-forwarded-host"), "example.com:9889");
  assert.equal(h.get("x-forwarded-for"), "10.0.0.1, 127.0.0.1");
  assert.equal(h.get("x-real-ip"), "127.0.0.1");
  assert.equal(h.get("x-forwarded-proto"), "https");
  assert.equal(h.get("forwarded"), 'for=127.0.0.1;proto=https;host="example.com:9889"');
  assert.equal(h.get("via"), "1.1 cdn, 3 spooky");
});

Deno.test("upstream headers: a client's TE: trailers is sent as ours (trailers are forwarded), other TE never", () => {
  const list = upstreamRequestHeaderList(
    [["te", "Trailers"], ["content-type", "application/grpc"]],
    {
      ip: "127.0.0.1",
      authority: "a.test",
    },
  );
  assert.deepEqual(list.filter(([n]) => n === "te"), [["te", "trailers"]]);
  const gz = upstreamRequestHeaderList([["te", "gzip"]], { ip: "127.0.0.1", authority: "a.test" });
  assert.equal(gz.find(([n]) => n === "te"), undefined);
});

Deno.test("upstream headers: IPv6 client in forwarded is quoted and bracketed (RFC 7239 §6)", () => {
  const h = upstreamRequestHeaders([], { ip: "::1", authority: "localhost" });
  assert.equal(h.get("forwarded"), 'for="[::1]";proto=https;host=localhost');
});

Deno.test("upstream headers: split cookie fields are joined with '; ' (RFC 9114 §4.2.1)", () => {
  const h = upstreamRequestHeaders([["cookie", "a=1"], ["cookie", "b=2"]], {
    ip: "1.2.3.4",
    authority: undefined,
  });
  assert.equal(h.get("cookie"), "a=1; b=2");
});

Deno.test("downstream fields: hop-by-hop dropped, via appended, encoded bodies keep their labels", () => {
  const plain = downstreamResponseFields([["content-length", "5"], ["connection", "close"], [
    "x-a",
    "1",
  ]]);
  assert.deepEqual(plain, [["content-length", "5"], ["x-a", "1"], ["via", "2 spooky"]]);
  const gz = downstreamResponseFields([["content-encoding", "gzip"], ["content-length", "35"]]);
  assert.deepEqual(gz, [["content-encoding", "gzip"], ["content-length", "35"], [
    "via",
    "2 spooky",
  ]]);
  assert.deepEqual(downstreamResponseFields([["via", "1.1 a"], ["via", "2 b"]]), [[
    "via",
    "1.1 a, 2 b, 2 spooky",
  ]]);
});

Deno.test("upstream headers: nothing is added that the client did not send but the forwarding fields", () => {
  const list = upstreamRequestHeaderList([["x-a", "1"]], { ip: "10.1.1.1", authority: "a.test" });
  assert.deepEqual(list.map(([n]) => n).sort(), [
    "forwarded",
    "via",
    "x-a",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
  ]);
});

Deno.test("upstream headers: values trimmed of HTTP whitespace at both ends, inner spaces kept; repeats joined", () => {
  const list = upstreamRequestHeaderList(
    [["x-a", " \t1 2\r\n"], ["x-b", "plain"], ["x-a", "3 "], ["x-c", ""]],
    { ip: "10.1.1.1", authority: "a.test" },
  );
  const m = new Map(list);
  assert.equal(m.get("x-a"), "1 2, 3");
  assert.equal(m.get("x-b"), "plain");
  assert.equal(m.get("x-c"), "");
});

const FORGED: Array<[string, string]> = [
  ["x-forwarded-for", "6.6.6.6"],
  ["x-forwarded-proto", "http"],
  ["x-forwarded-host", "evil.test"],
  ["forwarded", "for=6.6.6.6;proto=http"],
  ["x-real-ip", "6.6.6.6"],
  ["X-Forwarded-For".toLowerCase(), "7.7.7.7"],
];

Deno.test("upstream headers: an untrusted client's forwarding fields are replaced by the proxy's own", () => {
  const h = upstreamRequestHeaders(FORGED, { ip: "192.0.2.7", authority: "a.test" });
  assert.equal(h.get("x-forwarded-for"), "192.0.2.7");
  assert.equal(h.get("x-forwarded-proto"), "https");
  assert.equal(h.get("x-forwarded-host"), "a.test");
  assert.equal(h.get("forwarded"), "for=192.0.2.7;proto=https;host=a.test");
  assert.equal(h.get("x-real-ip"), "192.0.2.7");
  // Without an authority no x-forwarded-host is invented, and the forged one is still gone.
  const bare = upstreamRequestHeaders(FORGED, { ip: "192.0.2.7", authority: undefined });
  assert.equal(bare.get("x-forwarded-host"), null);
  assert.equal(bare.get("x-forwarded-for"), "192.0.2.7");
});

Deno.test("upstream headers: a trusted proxy's forwarding fields are kept and ours appended", () => {
  const h = upstreamRequestHeaders(FORGED, {
    ip: "10.0.0.2",
    authority: "a.test",
    trusted: true,
  });
  assert.equal(h.get("x-forwarded-for"), "6.6.6.6, 7.7.7.7, 10.0.0.2");
  assert.equal(h.get("x-forwarded-proto"), "http");
  assert.equal(h.get("x-forwarded-host"), "evil.test");
  assert.equal(
    h.get("forwarded"),
    "for=6.6.6.6;proto=http, for=10.0.0.2;proto=https;host=a.test",
  );
  assert.equal(h.get("x-real-ip"), "6.6.6.6");
  // A trusted proxy that sent none gets ours, as anyone would.
  const plain = upstreamRequestHeaders([], { ip: "10.0.0.2", authority: "a.test", trusted: true });
  assert.equal(plain.get("x-forwarded-for"), "10.0.0.2");
  assert.equal(plain.get("x-forwarded-proto"), "https");
  assert.equal(plain.get("x-real-ip"), "10.0.0.2");
});
