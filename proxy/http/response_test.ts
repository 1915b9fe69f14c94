import assert from "node:assert/strict";
import {
  finalStatusError,
  parseResponseSection,
  trailerSectionError,
  validateResponseHead,
} from "./response.ts";
import { MALFORMED_FIELDS, MALFORMED_SECTIONS } from "./_test_util.ts";

Deno.test("RFC 9110 §15, RFC 9113 §8.1, §8.6: a final status is 200-599", () => {
  for (const status of [200, 204, 304, 599]) assert.equal(finalStatusError(status), null);
  for (const status of [99, 600, 101, 100, 103, 200.5, -1]) {
    assert.notEqual(finalStatusError(status), null, String(status));
  }
});

Deno.test("RFC 9113 §8.2, §8.3: validateResponseHead checks a backend's final head", () => {
  assert.equal(validateResponseHead(200, [["content-length", "2"], ["x-a", "1"]]), 2);
  assert.equal(validateResponseHead(200, [["content-length", "2, 2"]]), 2);
  assert.equal(validateResponseHead(599, [["te", "trailers"]]), -1);
  assert.equal(typeof validateResponseHead(103, []), "string");
  for (const fields of MALFORMED_FIELDS) {
    assert.equal(typeof validateResponseHead(200, fields), "string", JSON.stringify(fields));
  }
});

Deno.test("RFC 9113 §8.3.2, RFC 9114 §4.3.2: a response section has one :status, first", () => {
  assert.deepEqual(parseResponseSection([[":status", "204"], ["server", "x"]]), {
    status: 204,
    fields: [["server", "x"]],
    contentLength: -1,
  });
  const head = parseResponseSection([[":status", "103"], ["content-length", "3"]]);
  assert.ok(typeof head !== "string");
  assert.equal(head.status, 103);
  assert.equal(head.contentLength, 3);
  for (const fields of MALFORMED_SECTIONS) {
    assert.equal(typeof parseResponseSection(fields), "string", JSON.stringify(fields));
  }
});

Deno.test("RFC 9113 §8.1: trailers carry no pseudo-header and only valid fields", () => {
  assert.equal(trailerSectionError([["grpc-status", "0"], ["x-checksum", "abc"]]), null);
  // Fields that may not be trailers are the forwarder's to drop, not malformed.
  assert.equal(trailerSectionError([["content-type", "text/plain"]]), null);
  for (const fields of MALFORMED_FIELDS.filter((f) => f[0][0] !== "content-length")) {
    assert.notEqual(trailerSectionError(fields), null, JSON.stringify(fields));
  }
});
