import assert from "node:assert/strict";
import { H1ResponseParser } from "./response_parser.ts";
import { H1_DEFAULTS } from "./types.ts";
import { bytes, crlf, errorOf, runText, type Summary } from "./_test_util.ts";

function headOf(s: Summary) {
  const e = s.events.find((e) => e.type === "head");
  assert.ok(e?.type === "head", `no head in ${JSON.stringify(s.events)}`);
  return e.head;
}

function assertError(s: Summary, kind: string, reason: RegExp): void {
  const error = errorOf(s);
  assert.ok(error, `expected an error, got ${JSON.stringify(s.events)}`);
  assert.equal(error.kind, kind, error.reason);
  assert.match(error.reason, reason);
  assert.equal(s.reusable, false);
  assert.equal(s.events.some((e) => e.type === "end"), false);
}

Deno.test("RFC 9112 §4, §6.3: status line, fields and a Content-Length body; the connection is reusable", () => {
  const s = runText("GET", crlf("HTTP/1.1 200 OK\nServer: x\ncontent-length: 5\n\nhello"));
  const head = headOf(s);
  assert.equal(head.status, 200);
  assert.equal(head.reason, "OK");
  assert.equal(head.version, "1.1");
  assert.equal(head.framing, "length");
  assert.equal(head.contentLength, 5);
  assert.deepEqual(head.fields, [["server", "x"], ["content-length", "5"]]);
  assert.equal(s.body, "hello");
  assert.deepEqual(s.events.at(-1), { type: "end", keepAlive: true });
  assert.equal(s.reusable, true);
});

Deno.test("RFC 9112 §4: a status line without a reason phrase, or with an empty one, is accepted", () => {
  for (const line of ["HTTP/1.1 204", "HTTP/1.1 204 "]) {
    const s = runText("GET", crlf(`${line}\n\n`));
    assert.equal(headOf(s).status, 204);
    assert.equal(s.reusable, true);
  }
});

Deno.test("RFC 9112 §4: a status line that is not HTTP/1.x is a protocol error", () => {
  for (
    const line of [
      "HTTP/2.0 200 OK",
      "HTTP/0.9 200 OK",
      "ICY 200 OK",
      "SSH-2.0-OpenSSH_9.6",
    ]
  ) {
    assertError(runText("GET", crlf(`${line}\ncontent-length: 0\n\n`)), "protocol", /HTTP\/1\.x/);
  }
  for (
    const line of [
      "HTTP/1.1  200 OK",
      "HTTP/1.1 20 OK",
      "HTTP/1.1 2000 OK",
      "http/1.1 200 OK",
      "HTTP/1.1",
    ]
  ) {
    assertError(runText("GET", crlf(`${line}\n\n`)), "protocol", /status line/);
  }
  assertError(runText("GET", crlf("HTTP/1.1 200 O\x01K\n\n")), "protocol", /reason phrase/);
});

Deno.test("RFC 9110 §15: a status outside 100-599 is an invalid response", () => {
  assertError(runText("GET", crlf("HTTP/1.1 099 X\n\n")), "invalid_response", /invalid status 99/);
  assertError(runText("GET", crlf("HTTP/1.1 600 X\n\n")), "invalid_response", /invalid status 600/);
});

Deno.test("RFC 9112 §5.2: obsolete line folding is rejected", () => {
  const s = runText("GET", crlf("HTTP/1.1 200 OK\nx-a: 1\n 2\ncontent-length: 0\n\n"));
  assertError(s, "protocol", /obsolete line folding/);
  const tab = runText("GET", crlf("HTTP/1.1 200 OK\nx-a: 1\n\t2\ncontent-length: 0\n\n"));
  assertError(tab, "protocol", /obsolete line folding/);
});

Deno.test("RFC 9112 §2.2: a bare CR anywhere in a line is rejected", () => {
  assertError(runText("GET", "HTTP/1.1 200 OK\r\nx: a\rb\r\n\r\n"), "protocol", /bare CR/);
  assertError(runText("GET", "HTTP/1.1 200\rOK\r\n\r\n"), "protocol", /bare CR/);
  const chunk = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\r\nhello\r\n0\r\n\r\n";
  assertError(runText("GET", chunk), "protocol", /bare CR/);
});

Deno.test("RFC 9112 §2.2: a bare LF is no line end", () => {
  assertError(runText("GET", "HTTP/1.1 200 OK\nx: 1\r\n\r\n"), "protocol", /LF without CR/);
  assertError(runText("GET", "HTTP/1.1 200 OK\r\nx: 1\n\r\n"), "protocol", /LF without CR/);
  const chunk = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n";
  assertError(runText("GET", chunk), "protocol", /LF without CR/);
});

Deno.test("RFC 9112 §5.1: whitespace between a field name and its colon, or an invalid name, is rejected", () => {
  const s = runText("GET", crlf("HTTP/1.1 200 OK\ncontent-length : 5\n\nhello"));
  assertError(s, "protocol", /whitespace between a field name and its colon/);
  assertError(runText("GET", crlf("HTTP/1.1 200 OK\nx(y): 1\n\n")), "protocol", /field name/);
  assertError(runText("GET", crlf("HTTP/1.1 200 OK\nno colon\n\n")), "protocol", /colon/);
  assertError(runText("GET", crlf("HTTP/1.1 200 OK\nx: a\x00b\n\n")), "protocol", /NUL/);
});

Deno.test("RFC 9112 §5: field values lose their surrounding whitespace; names are lowercased", () => {
  const s = runText("GET", crlf("HTTP/1.1 200 OK\nX-Id: \t a b \t\nContent-Length:0\n\n"));
  assert.deepEqual(headOf(s).fields, [["x-id", "a b"], ["content-length", "0"]]);
  assert.equal(s.reusable, true);
});

Deno.test("RFC 9112 §6.3: a response with both Content-Length and Transfer-Encoding is rejected", () => {
  const text = "HTTP/1.1 200 OK\ncontent-length: 5\ntransfer-encoding: chunked\n\n5\nhello\n0\n\n";
  assertError(runText("GET", crlf(text)), "invalid_response", /both Content-Length/);
  // Even where neither frames anything: the backend's framing is not to be trusted.
  assertError(runText("HEAD", crlf(text)), "invalid_response", /both Content-Length/);
});

Deno.test("RFC 9110 §8.6: differing Content-Lengths are rejected; identical repeated ones are one", () => {
  const two = runText(
    "GET",
    crlf("HTTP/1.1 200 OK\ncontent-length: 5\ncontent-length: 6\n\nhello!"),
  );
  assertError(two, "invalid_response", /conflicting content-length/);
  const list = runText("GET", crlf("HTTP/1.1 200 OK\ncontent-length: 5, 6\n\nhello!"));
  assertError(list, "invalid_response", /conflicting content-length/);
  assertError(
    runText("GET", crlf("HTTP/1.1 200 OK\ncontent-length: -1\n\n")),
    "invalid_response",
    /content-length/,
  );
  const same = runText(
    "GET",
    crlf("HTTP/1.1 200 OK\ncontent-length: 5\ncontent-length: 5, 5\n\nhello"),
  );
  assert.equal(headOf(same).contentLength, 5);
  assert.equal(same.body, "hello");
});

Deno.test("RFC 9112 §6.1: a transfer coding other than chunked alone is rejected", () => {
  for (const te of ["gzip", "gzip, chunked", "chunked, chunked", "identity"]) {
    const s = runText("GET", crlf(`HTTP/1.1 200 OK\ntransfer-encoding: ${te}\n\n0\n\n`));
    assertError(s, "invalid_response", /unsupported transfer coding/);
  }
  const s = runText("GET", crlf("HTTP/1.1 200 OK\nTransfer-Encoding: Chunked\n\n0\n\n"));
  assert.equal(headOf(s).framing, "chunked");
});

Deno.test("RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 response is rejected", () => {
  const s = runText("GET", crlf("HTTP/1.0 200 OK\ntransfer-encoding: chunked\n\n5\nhello\n0\n\n"));
  assertError(s, "invalid_response", /HTTP\/1\.0/);
});

Deno.test("RFC 9112 §7.1: a chunked body, its extensions and its trailer section", () => {
  const text = "HTTP/1.1 200 OK\ntransfer-encoding: chunked\ntrailer: x-sum\n\n" +
    '5;name=value\nhello\n1 ; a ; b="q\\"x"\n!\n0\nx-sum: 6\n\n';
  const s = runText("GET", crlf(text));
  const head = headOf(s);
  assert.equal(head.framing, "chunked");
  assert.deepEqual(head.fields, []); // transfer-encoding and trailer are hop-by-hop
  assert.equal(s.body, "hello!");
  assert.deepEqual(s.events.slice(-2), [
    { type: "trailers", fields: [["x-sum", "6"]] },
    { type: "end", keepAlive: true },
  ]);
  assert.equal(s.reusable, true);
});

Deno.test("RFC 9112 §7.1: invalid chunk sizes are rejected", () => {
  for (const size of ["x", "-1", "0x5", "", " 5", "5 ", "+5", "5;", "20000000000000"]) {
    const s = runText(
      "GET",
      crlf(`HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n${size}\nhello\n0\n\n`),
    );
    assertError(s, "protocol", /chunk/);
  }
});

Deno.test("RFC 9112 §7.1: a chunk size past 2^53 is rejected, not rounded", () => {
  const s = runText(
    "GET",
    crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n20000000000001\nx\n"),
  );
  assertError(s, "protocol", /chunk size too large/);
});

Deno.test("RFC 9112 §7.1.1: malformed chunk extensions are rejected", () => {
  for (const ext of [";", "; =v", ";a=", ';a="open', ";a b", "x", ";a=\x01"]) {
    const s = runText(
      "GET",
      crlf(`HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n5${ext}\nhello\n0\n\n`),
    );
    assertError(s, "protocol", /chunk/);
  }
});

Deno.test("RFC 9112 §7.1.1: a chunk-size line over the bound is rejected; one at the bound is accepted", () => {
  const max = 64;
  const line = (n: number) => `5;a=${"x".repeat(n - "5;a=".length - 2)}`; // n bytes with CRLF
  const at = runText(
    "GET",
    crlf(`HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n${line(max)}\nhello\n0\n\n`),
    {
      parser: { maxChunkLineBytes: max },
    },
  );
  assert.equal(at.body, "hello");
  const over = runText(
    "GET",
    crlf(`HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n${line(max + 1)}\nhello\n0\n\n`),
    {
      parser: { maxChunkLineBytes: max },
    },
  );
  assertError(over, "protocol", /chunk-size line over 64 bytes/);
  // The default bound holds when the extension never ends.
  const p = new H1ResponseParser("GET");
  p.push(bytes(crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n5;a=")));
  const events = p.push(bytes("x".repeat(H1_DEFAULTS.maxChunkLineBytes)));
  assert.equal(events.at(-1)?.type, "error");
});

Deno.test("RFC 9112 §7.1: chunk data not followed by CRLF is rejected", () => {
  const s = runText("GET", crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n5\nhelloX\n0\n\n"));
  assertError(s, "protocol", /not followed by CRLF/);
  const lf = runText(
    "GET",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r0\r\n\r\n",
  );
  assertError(lf, "protocol", /not followed by CRLF/);
});

Deno.test("RFC 9112 §7.1.2: a trailer section over its bounds or malformed is rejected", () => {
  const body = "HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n0\n";
  const many = runText("GET", crlf(`${body}${"x: 1\n".repeat(5)}\n`), { parser: { maxFields: 4 } });
  assertError(many, "protocol", /trailer section: more than 4 field lines/);
  const big = runText("GET", crlf(`${body}x: ${"y".repeat(100)}\n\n`), {
    parser: { maxHeadBytes: 64 },
  });
  assertError(big, "protocol", /trailer section: section over 64 bytes/);
  const fold = runText("GET", crlf(`${body}x: 1\n 2\n\n`));
  assertError(fold, "protocol", /obsolete line folding/);
  const conn = runText("GET", crlf(`${body}transfer-encoding: chunked\n\n`));
  assertError(conn, "invalid_response", /trailers: connection-specific/);
});

Deno.test("RFC 9112 §6.3: a body without Content-Length or chunked ends at the close; never reusable", () => {
  const p = new H1ResponseParser("GET");
  const events = p.push(bytes(crlf("HTTP/1.1 200 OK\nx: 1\n\nsome")));
  assert.equal(events[0].type === "head" && events[0].head.framing, "close");
  assert.equal(p.push(bytes(" more")).length, 1);
  assert.equal(p.done, false);
  assert.deepEqual(p.eof(), [{ type: "end", keepAlive: false }]);
  assert.equal(p.reusable, false);
});

Deno.test("RFC 9112 §8: a connection closed before the response is complete is a protocol error", () => {
  const cases = [
    "",
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",
  ];
  for (const text of cases) {
    const s = runText("GET", text, { eof: true });
    assertError(s, "protocol", /connection closed before the response/);
  }
  const p = new H1ResponseParser("GET");
  p.eof();
  assert.equal(p.received, 0);
});

Deno.test("RFC 9110 §15.2: 100 and 103 come before the final response, their fields kept", () => {
  const text =
    "HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Early Hints\nlink: </a.css>; rel=preload\n\n" +
    "HTTP/1.1 200 OK\ncontent-length: 2\n\nok";
  const s = runText("POST", crlf(text));
  assert.deepEqual(s.events.slice(0, 2), [
    { type: "informational", status: 100, fields: [] },
    { type: "informational", status: 103, fields: [["link", "</a.css>; rel=preload"]] },
  ]);
  assert.equal(headOf(s).status, 200);
  assert.equal(s.body, "ok");
  assert.equal(s.reusable, true);
});

Deno.test("RFC 9110 §15.2: more informational responses than the bound is a protocol error", () => {
  const one = "HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n";
  const final = "HTTP/1.1 204 No Content\r\n\r\n";
  const at = runText("GET", one.repeat(3) + final, { parser: { maxInformational: 3 } });
  assert.equal(headOf(at).status, 204);
  const over = runText("GET", one.repeat(4) + final, { parser: { maxInformational: 3 } });
  assertError(over, "protocol", /more than 3 informational responses/);
  const flood = runText("GET", one.repeat(H1_DEFAULTS.maxInformational + 1) + final);
  assertError(flood, "protocol", /informational responses/);
});

Deno.test("RFC 9110 §15.2.2: 101 Switching Protocols is an upgrade; the rest belongs to the new protocol", () => {
  const text =
    "HTTP/1.1 101 Switching Protocols\nupgrade: websocket\nconnection: upgrade\nsec-websocket-accept: x\n\n";
  const p = new H1ResponseParser("GET");
  const events = p.push(bytes(crlf(text) + "\x81\x00"));
  assert.equal(events.length, 1);
  const e = events[0];
  assert.ok(e.type === "upgrade");
  assert.equal(e.status, 101);
  assert.deepEqual(e.fields, [["sec-websocket-accept", "x"]]);
  assert.deepEqual(e.upgrade, ["websocket"]);
  assert.deepEqual(e.connection, ["upgrade"]);
  assert.deepEqual([...e.rest], [0x81, 0x00]);
  assert.equal(p.done, true);
  assert.equal(p.reusable, false);
  assert.deepEqual(p.push(bytes("more frames")), []); // not excess: another protocol's
});

Deno.test("RFC 9112 §6.3: a 2xx answer to CONNECT is a tunnel", () => {
  const s = runText("CONNECT", crlf("HTTP/1.1 200 OK\n\nrest"));
  assert.equal(s.events[0].type, "upgrade");
  assert.equal(s.reusable, false);
});

Deno.test("RFC 9112 §6.3: the answer to HEAD, 204 and 304 have no content whatever their fields say", () => {
  const head = runText("HEAD", crlf("HTTP/1.1 200 OK\ncontent-length: 9\n\n"));
  assert.equal(headOf(head).framing, "none");
  assert.equal(headOf(head).contentLength, 9);
  assert.equal(head.reusable, true);
  const chunkedHead = runText("HEAD", crlf("HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n"));
  assert.equal(chunkedHead.reusable, true);
  for (const status of [204, 304]) {
    const s = runText("GET", crlf(`HTTP/1.1 ${status} X\ncontent-length: 9\n\n`));
    assert.equal(headOf(s).framing, "none");
    assert.deepEqual(s.events.at(-1), { type: "end", keepAlive: true });
    assert.equal(s.reusable, true);
  }
});

Deno.test("RFC 9112 §9.3: persistence: HTTP/1.1 unless close, HTTP/1.0 only with keep-alive", () => {
  const cases: Array<[string, boolean]> = [
    ["HTTP/1.1 200 OK\ncontent-length: 0\n\n", true],
    ["HTTP/1.1 200 OK\nconnection: close\ncontent-length: 0\n\n", false],
    ["HTTP/1.1 200 OK\nConnection: Keep-Alive, Close\ncontent-length: 0\n\n", false],
    ["HTTP/1.0 200 OK\ncontent-length: 0\n\n", false],
    ["HTTP/1.0 200 OK\nconnection: keep-alive\nkeep-alive: timeout=5\ncontent-length: 0\n\n", true],
    ["HTTP/1.1 200 OK\n\n", false], // close-delimited, ended by eof
  ];
  for (const [text, reusable] of cases) {
    const s = runText("GET", crlf(text), { eof: true });
    assert.equal(s.reusable, reusable, text);
    assert.equal(errorOf(s), undefined);
  }
});

Deno.test("RFC 9110 §7.6.1: connection-specific, hop-by-hop and Connection-named fields are not handed on", () => {
  const text = "HTTP/1.1 200 OK\nconnection: x-hop, keep-alive\nkeep-alive: timeout=5\nx-hop: 1\n" +
    "proxy-connection: x\nupgrade: h2c\nx-end: 2\ncontent-length: 0\n\n";
  const s = runText("GET", crlf(text));
  assert.deepEqual(headOf(s).fields, [["x-end", "2"], ["content-length", "0"]]);
});

Deno.test("RFC 9112 §9.3: bytes after a complete response are excess: the connection is never reused", () => {
  const same = runText("GET", crlf("HTTP/1.1 200 OK\ncontent-length: 2\n\nokHTTP/1.1 200 OK\n\n"));
  assert.equal(same.body, "ok");
  assert.equal(same.excess, "HTTP/1.1 200 OK\r\n\r\n".length);
  assert.equal(same.reusable, false);
  const p = new H1ResponseParser("GET");
  p.push(bytes(crlf("HTTP/1.1 204 No Content\n\n")));
  assert.equal(p.reusable, true);
  assert.deepEqual(p.push(bytes("x")), [{ type: "excess", length: 1 }]);
  assert.equal(p.excess, 1);
  assert.equal(p.reusable, false);
});

Deno.test("an error ends the parser: later bytes and eof report nothing more", () => {
  const p = new H1ResponseParser("GET");
  assert.equal(p.push(bytes("HTTP/2 200\r\n")).at(-1)?.type, "error");
  assert.deepEqual(p.push(bytes("more")), []);
  assert.deepEqual(p.eof(), []);
  assert.equal(p.excess, 0);
  assert.equal(p.reusable, false);
});

Deno.test("bounds: a head over maxHeadBytes is rejected, one at the bound is accepted", () => {
  const status = "HTTP/1.1 200 OK\r\n";
  const headOfSize = (n: number) => `${status}x: ${"a".repeat(n - status.length - 7)}\r\n\r\n`;
  assert.equal(headOfSize(100).length, 100);
  const at = runText("HEAD", headOfSize(100), { parser: { maxHeadBytes: 100 } });
  assert.equal(headOf(at).status, 200);
  const over = runText("HEAD", headOfSize(101), { parser: { maxHeadBytes: 100 } });
  assertError(over, "protocol", /section over 100 bytes/);
  // A status line that never ends is bounded too, with the default.
  const p = new H1ResponseParser("GET");
  const events = p.push(bytes("HTTP/1.1 200 " + "x".repeat(H1_DEFAULTS.maxHeadBytes)));
  assert.equal(events.at(-1)?.type, "error");
});

Deno.test("bounds: maxHeadBytes counts the whole head, not one line", () => {
  const fields = Array.from({ length: 40 }, (_, i) => `x-${i}: ${"v".repeat(40)}\r\n`).join("");
  const text = `HTTP/1.1 204 No Content\r\n${fields}\r\n`;
  const over = runText("GET", text, { parser: { maxHeadBytes: text.length - 1 } });
  assertError(over, "protocol", /section over/);
  const at = runText("GET", text, { parser: { maxHeadBytes: text.length } });
  assert.equal(headOf(at).status, 204);
  const huge = `HTTP/1.1 204 No Content\r\n${"x: 1\r\n".repeat(12_000)}\r\n`;
  assertError(
    runText("GET", huge, { parser: { maxFields: 100_000 } }),
    "protocol",
    /section over 65536 bytes/,
  );
});

Deno.test("bounds: more field lines than maxFields are rejected, as many as the bound are accepted", () => {
  const text = (n: number) => `HTTP/1.1 204 No Content\r\n${"x: 1\r\n".repeat(n)}\r\n`;
  assert.equal(headOf(runText("GET", text(10), { parser: { maxFields: 10 } })).fields.length, 10);
  assertError(
    runText("GET", text(11), { parser: { maxFields: 10 } }),
    "protocol",
    /more than 10 field lines/,
  );
  assertError(runText("GET", text(H1_DEFAULTS.maxFields + 1)), "protocol", /field lines/);
});

Deno.test("RFC 9112 §6.3: a Content-Length body is handed on as views of the input, never past its end", () => {
  const input = bytes(crlf("HTTP/1.1 200 OK\ncontent-length: 3\n\n") + "abcdef");
  const p = new H1ResponseParser("GET");
  const events = p.push(input);
  const data = events.find((e) => e.type === "data");
  assert.ok(data?.type === "data");
  assert.equal(data.data.buffer, input.buffer);
  assert.equal(data.data.length, 3);
  assert.deepEqual(events.at(-1), { type: "excess", length: 3 });
});
