import assert from "node:assert/strict";
import fc from "fast-check";
import { PaymentsError } from "../domain/errors.ts";
import { exactNumber, isJsonMediaType, parseJsonBody } from "./json_body.ts";

const refused = (detail: string, rule: RegExp) => (e: unknown) =>
  e instanceof PaymentsError && e.status === 400 && e.details[0].detail === detail &&
  rule.test(e.details[0].moreInfo ?? "");

Deno.test("parseJsonBody: a key given twice in one object is refused with its path", () => {
  assert.throws(() => parseJsonBody('{"a":1,"a":2}'), refused("a", /duplicate key: "a"/));
  assert.throws(() => parseJsonBody('{"x":{"b":1,"b":1}}'), refused("x.b", /duplicate/));
  assert.throws(
    () => parseJsonBody('{"l":[{"k":1},{"k":1,"k":2}]}'),
    refused("l.1.k", /duplicate/),
  );
  // escapes spell the same key
  assert.throws(() => parseJsonBody('{"ab":1,"a\\u0062":2}'), refused("ab", /duplicate/));
  // strings that look like keys are values; same keys in sibling objects are fine
  assert.deepEqual(parseJsonBody('{"a":"a","b":["a","a"],"c":{"a":{"a":1}},"d":{"a":2}}'), {
    a: "a",
    b: ["a", "a"],
    c: { a: { a: 1 } },
    d: { a: 2 },
  });
  assert.deepEqual(parseJsonBody('{"q":"\\"a\\":1,\\"a\\"","a":1}'), { q: '"a":1,"a"', a: 1 });
});

Deno.test("parseJsonBody: a number a double cannot hold exactly is refused, not rounded", () => {
  assert.throws(
    () => parseJsonBody('{"amount":99999.989999999999}'),
    refused(
      "amount",
      /99999\.989999999999 cannot be taken exactly \(it would be read as 99999\.99\)/,
    ),
  );
  assert.throws(() => parseJsonBody('{"a":[1,9007199254740993]}'), refused("a.1", /exactly/));
  assert.throws(() => parseJsonBody('{"a":1e400}'), refused("a", /exactly/));
  for (
    const lit of ["0", "-0", "0.1", "99999.99", "1.50", "1e2", "1.2E+1", "5e-7", "1e21", "-12.5"]
  ) {
    assert.ok(exactNumber(lit), lit);
  }
  for (const lit of ["0.10000000000000001", "9007199254740993", "1e400", "123456789.0123456789"]) {
    assert.ok(!exactNumber(lit), lit);
  }
});

Deno.test("parseJsonBody: whatever JSON.stringify writes parses back unchanged", () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
      assert.deepEqual(parseJsonBody(JSON.stringify(obj)), JSON.parse(JSON.stringify(obj)));
    }),
    { numRuns: 300 },
  );
});

Deno.test("parseJsonBody: malformed JSON or a non-object is 400 body is invalid.", () => {
  for (const text of ["{", "[1]", "1", "null", '"s"']) {
    assert.throws(
      () => parseJsonBody(text),
      (e) =>
        e instanceof PaymentsError && e.details[0].message === "body is invalid." &&
        e.details[0].moreInfo === "a JSON object",
      text,
    );
  }
});

Deno.test("isJsonMediaType: application/json and +json, UTF-8 or no charset", () => {
  for (
    const t of ["application/json", "APPLICATION/JSON ; charset=utf-8", "application/vnd.x+json"]
  ) {
    assert.ok(isJsonMediaType(t), t);
  }
  for (const t of ["text/plain", "application/json; charset=latin1", "application/jsonp", ""]) {
    assert.ok(!isJsonMediaType(t), t);
  }
});
