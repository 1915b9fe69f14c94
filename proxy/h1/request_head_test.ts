import assert from "node:assert/strict";
import { parseRequestHead } from "./request_head.ts";
import { bytes, crlf } from "./_test_util.ts";

Deno.test("RFC 9112 §3, §5: a request head: request line, lowercased fields, where it ends", () => {
  const text = crlf("GET /chat?x=1 HTTP/1.1\nHost: a.example\nUpgrade:  websocket \n\n") + "rest";
  const head = parseRequestHead(bytes(text));
  assert.ok(typeof head !== "string", head as string);
  assert.deepEqual(
    { ...head, next: text.slice(head.next) },
    {
      method: "GET",
      target: "/chat?x=1",
      version: "1.1",
      fields: [["host", "a.example"], ["upgrade", "websocket"]],
      next: "rest",
    },
  );
});

Deno.test("RFC 9112 §2.2, §3, §5.2: malformed request heads are refused", () => {
  for (
    const [text, why] of [
      ["GET /a HTTP/1.1\nHost: x\n\n", /bare LF|CR/],
      [crlf("GET /a b HTTP/1.1\n\n"), /malformed request line/],
      [crlf("GET /a HTTP/2\n\n"), /not an HTTP\/1\.x request/],
      [crlf("G(T /a HTTP/1.1\n\n"), /invalid method/],
      [crlf("GET /a HTTP/1.1\nHost: x\n folded\n\n"), /obsolete line folding/],
      [crlf("GET /a HTTP/1.1\nHost : x\n\n"), /whitespace between a field name and its colon/],
      [crlf("GET /a HTTP/1.1\nHost: x\n"), /incomplete/],
    ] as const
  ) {
    const got = parseRequestHead(bytes(text));
    assert.equal(typeof got, "string", text);
    assert.match(got as string, why, text);
  }
});
