/**
 * The parser's answer does not depend on how the bytes arrive: every input
 * here is parsed whole, then split at every byte boundary, then byte by
 * byte, then at random cuts (fast-check), and the summaries must agree.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { H1ResponseParser } from "./response_parser.ts";
import { encodeChunk, encodeLastChunk } from "./request.ts";
import { bytes, crlf, cutAt, run, type Summary } from "./_test_util.ts";

/** Responses valid and invalid, one of each framing and of each rejection, with their method. */
const CASES: ReadonlyArray<[method: string, text: string]> = [
  ["GET", crlf("HTTP/1.1 200 OK\nx: 1\ncontent-length: 5\n\nhello")],
  ["GET", crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n5;e=1\nhello\n1\n!\n0\nx-t: 1\n\n")],
  ["GET", crlf("HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Hints\nlink: </a>\n\nHTTP/1.1 204 No\n\n")],
  ["GET", crlf("HTTP/1.1 200 OK\n\nclose-delimited body")],
  ["HEAD", crlf("HTTP/1.1 200 OK\ncontent-length: 50\n\n")],
  ["GET", crlf("HTTP/1.1 101 Switching\nupgrade: websocket\n\n\x81\x00")],
  ["GET", crlf("HTTP/1.1 200 OK\ncontent-length: 2\n\nokEXTRA")],
  ["GET", crlf("HTTP/1.1 200 OK\ncontent-length: 2\ntransfer-encoding: chunked\n\n2\nok\n0\n\n")],
  ["GET", crlf("HTTP/1.1 200 OK\nx: 1\n 2\n\n")],
  ["GET", "HTTP/1.1 200 OK\r\nx: a\rb\r\n\r\n"],
  ["GET", "HTTP/1.1 200 OK\nx: 1\r\n\r\n"],
  ["GET", crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\nzz\nhello\n0\n\n")],
  ["GET", crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n5\nhelloXY0\n\n")],
  ["GET", crlf("HTTP/2.0 200 OK\n\n")],
  ["GET", crlf("HTTP/1.1 200 OK\ncontent-length: 1\ncontent-length: 2\n\nab")],
  ["GET", crlf(`HTTP/1.1 204 No\n${"x: 1\n".repeat(9)}\n`)], // over maxFields 8
  ["GET", crlf(`HTTP/1.1 204 No\nx: ${"y".repeat(200)}\n\n`)], // over maxHeadBytes 200
  ["GET", crlf(`HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n1;${"e".repeat(40)}\nx\n0\n\n`)],
  ["GET", crlf("HTTP/1.1 103 A\n\n".repeat(4) + "HTTP/1.1 204 No\n\n")], // over maxInformational 3
];

const LIMITS = { maxFields: 8, maxHeadBytes: 200, maxChunkLineBytes: 32, maxInformational: 3 };

function parse(method: string, parts: Uint8Array[]): Summary {
  return run(method, parts, { eof: true, parser: LIMITS });
}

Deno.test("RFC 9112 §2.2: every response parses the same split at any byte boundary", () => {
  for (const [method, text] of CASES) {
    const input = bytes(text);
    const whole = parse(method, [input]);
    for (let i = 0; i <= input.length; i++) {
      assert.deepEqual(
        parse(method, cutAt(input, [i])),
        whole,
        `${JSON.stringify(text)} cut at ${i}`,
      );
    }
    const single = Array.from({ length: input.length }, (_, i) => input.subarray(i, i + 1));
    assert.deepEqual(parse(method, single), whole, `${JSON.stringify(text)} byte by byte`);
  }
});

Deno.test("RFC 9112 §2.2: every response parses the same at any set of cuts (fast-check)", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...CASES),
      fc.array(fc.nat({ max: 400 }), { maxLength: 12 }),
      ([method, text], cuts) => {
        const input = bytes(text);
        assert.deepEqual(parse(method, cutAt(input, cuts)), parse(method, [input]));
      },
    ),
    { numRuns: 2000 },
  );
});

const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/).filter((n) =>
  !["content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade"]
    .includes(n) && !n.startsWith("proxy-")
);
const value = fc.stringMatching(/^[!-~]([ !-~]{0,10}[!-~])?$/);
const field = fc.tuple(token, value);
const body = fc.uint8Array({ maxLength: 300 });

/** A valid response: head fields, body, framing, trailers, interim responses; and its cuts. */
const response = fc.record({
  informational: fc.array(fc.constantFrom(100, 102, 103), { maxLength: 3 }),
  status: fc.constantFrom(200, 201, 203, 206, 400, 404, 500, 503),
  fields: fc.array(field, { maxLength: 6 }),
  body,
  framing: fc.constantFrom("length", "chunked", "close"),
  chunks: fc.array(fc.nat({ max: 300 }), { maxLength: 6 }),
  trailers: fc.array(fc.tuple(fc.constant("x-t"), value), { maxLength: 2 }),
  cuts: fc.array(fc.nat({ max: 1200 }), { maxLength: 16 }),
});

type Response = typeof response extends fc.Arbitrary<infer T> ? T : never;

function encode(r: Response): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const s of r.informational) parts.push(bytes(`HTTP/1.1 ${s} Interim\r\n\r\n`));
  let head = `HTTP/1.1 ${r.status} Final\r\n`;
  for (const [n, v] of r.fields) head += `${n}: ${v}\r\n`;
  if (r.framing === "length") head += `content-length: ${r.body.length}\r\n`;
  if (r.framing === "chunked") head += "transfer-encoding: chunked\r\n";
  parts.push(bytes(`${head}\r\n`));
  if (r.framing !== "chunked") {
    parts.push(r.body);
  } else {
    for (const piece of cutAt(r.body, r.chunks)) parts.push(encodeChunk(piece));
    parts.push(encodeLastChunk(r.trailers) as Uint8Array);
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

Deno.test("RFC 9112 §6.3, §7.1: generated responses parse to what was encoded, however cut (fast-check)", () => {
  fc.assert(
    fc.property(response, (r) => {
      const s = run("GET", cutAt(encode(r), r.cuts), { eof: true });
      assert.deepEqual(
        s.events.filter((e) => e.type === "informational").map((e) =>
          e.type === "informational" && e.status
        ),
        r.informational,
      );
      const head = s.events.find((e) => e.type === "head");
      assert.ok(head?.type === "head", JSON.stringify(s.events));
      assert.equal(head.head.status, r.status);
      assert.deepEqual(head.head.fields.filter(([n]) => n !== "content-length"), r.fields);
      assert.equal(s.body, String.fromCharCode(...r.body));
      const trailers = s.events.find((e) => e.type === "trailers");
      const expected = r.framing === "chunked" && r.trailers.length > 0 ? r.trailers : undefined;
      assert.deepEqual(trailers?.type === "trailers" ? trailers.fields : undefined, expected);
      assert.equal(s.events.at(-1)?.type, "end");
      assert.equal(s.reusable, r.framing !== "close");
    }),
    { numRuns: 1500 },
  );
});

Deno.test("arbitrary bytes never throw, give at most one error, and eof always ends the parser (fast-check)", () => {
  const prefix = fc.constantFrom(
    "",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
    "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n",
  );
  const noise = fc.array(
    fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.constantFrom("\r\n", "\r", "\n", ":", " ", ";", "0").map(bytes),
    ),
    { maxLength: 20 },
  );
  fc.assert(
    fc.property(prefix, noise, fc.boolean(), (p, parts, eof) => {
      const parser = new H1ResponseParser("GET", LIMITS);
      const events = parser.push(bytes(p));
      for (const part of parts) events.push(...parser.push(part));
      if (eof) events.push(...parser.eof());
      const errors = events.filter((e) => e.type === "error");
      assert.ok(errors.length <= 1);
      if (eof) assert.equal(parser.done, true);
    }),
    { numRuns: 3000 },
  );
});
