import assert from "node:assert/strict";
import fc from "fast-check";
import { type FieldLine, HpackDecoder, HpackDynamicTable, HpackEncoder } from "./hpack.ts";
import { hex } from "../hpack_common/_test_util.ts";

function table(d: HpackDecoder): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < d.table.length; i++) out.push(d.table.get(i)!);
  return out;
}

const REQUESTS: FieldLine[][] = [
  [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"]],
  [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "www.example.com"], [
    "cache-control",
    "no-cache",
  ]],
  [[":method", "GET"], [":scheme", "https"], [":path", "/index.html"], [
    ":authority",
    "www.example.com",
  ], ["custom-key", "custom-value"]],
];

Deno.test("RFC 7541 C.3: requests without Huffman coding share one dynamic table", () => {
  const d = new HpackDecoder(4096);
  const blocks = [
    "828684410f7777772e6578616d706c652e636f6d",
    "828684be58086e6f2d6361636865",
    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
  ];
  blocks.forEach((b, i) => assert.deepEqual(d.decode(hex(b)), REQUESTS[i]));
  assert.equal(d.table.size, 164);
  assert.deepEqual(table(d), [["custom-key", "custom-value"], ["cache-control", "no-cache"], [
    ":authority",
    "www.example.com",
  ]]);
});

Deno.test("RFC 7541 C.4: requests with Huffman coding", () => {
  const d = new HpackDecoder(4096);
  const blocks = [
    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
    "8286 84be 5886 a8eb 1064 9cbf",
    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
  ];
  blocks.forEach((b, i) => assert.deepEqual(d.decode(hex(b)), REQUESTS[i]));
  assert.equal(d.table.size, 164);
});

Deno.test("RFC 7541 C.5: responses with a 256-octet table evict the oldest entries", () => {
  const d = new HpackDecoder(256);
  assert.deepEqual(
    d.decode(hex(
      "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133" +
        "2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70" +
        "6c65 2e63 6f6d",
    )),
    [[":status", "302"], ["cache-control", "private"], ["date", "Mon, 21 Oct 2013 20:13:21 GMT"], [
      "location",
      "https://www.example.com",
    ]],
  );
  assert.equal(d.table.size, 222);
  assert.deepEqual(d.decode(hex("4803 3330 37c1 c0bf")), [
    [":status", "307"],
    ["cache-control", "private"],
    ["date", "Mon, 21 Oct 2013 20:13:21 GMT"],
    ["location", "https://www.example.com"],
  ]);
  assert.equal(d.table.size, 222);
  assert.equal(d.table.get(0)![1], "307");
  assert.deepEqual(
    d.decode(hex(
      "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d" +
        "54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049" +
        "5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e" +
        "3d31",
    )),
    [
      [":status", "200"],
      ["cache-control", "private"],
      ["date", "Mon, 21 Oct 2013 20:13:22 GMT"],
      ["location", "https://www.example.com"],
      ["content-encoding", "gzip"],
      ["set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"],
    ],
  );
  assert.equal(d.table.size, 215);
  assert.deepEqual(table(d).map((e) => e[0]), ["set-cookie", "content-encoding", "date"]);
});

Deno.test("RFC 7541 §6.3: a size update shrinks the table; one above our limit is an error", () => {
  const d = new HpackDecoder(4096);
  d.decode(hex("400a637573746f6d2d6b65790c637573746f6d2d76616c7565"));
  assert.equal(d.table.length, 1);
  assert.deepEqual(d.decode(hex("20")), []);
  assert.equal(d.table.length, 0);
  const tooBig = d.decode(hex("3fe21f")); // 4097 with a 5-bit prefix
  assert.ok(!Array.isArray(tooBig) && tooBig.kind === "compression");
  // After a field, a size update is an error (§4.2).
  const late = d.decode(hex("8220"));
  assert.ok(!Array.isArray(late) && late.kind === "compression");
});

Deno.test("RFC 7541 §2.3.3: an index past the table is a compression error, not a throw", () => {
  const d = new HpackDecoder();
  for (const b of ["be", "80", "7e00", "0f2f00"]) {
    const r = d.decode(hex(b));
    assert.ok(!Array.isArray(r) && r.kind === "compression", b);
  }
});

Deno.test("RFC 7541 §5.2: bad Huffman padding and truncated literals are compression errors", () => {
  const d = new HpackDecoder();
  for (const b of ["0081ff", "00838cf1", "000a6162"]) {
    const r = d.decode(hex(b));
    assert.ok(!Array.isArray(r) && r.kind === "compression", b);
  }
});

Deno.test("RFC 9113 §6.5.2: a list over the limit is reported, and the table stays in step", () => {
  const d = new HpackDecoder();
  const r = d.decode(hex("400a637573746f6d2d6b65790c637573746f6d2d76616c7565"), 40);
  assert.ok(!Array.isArray(r) && r.kind === "too-large");
  assert.equal(d.table.length, 1); // indexed all the same
});

Deno.test("HPACK encoder: static full matches, literal names, never-indexed credentials", () => {
  const e = new HpackEncoder({ huffman: false });
  const fields: FieldLine[] = [
    [":method", "GET"],
    [":path", "/x"],
    ["authorization", "Bearer t"],
    ["x-Odd", "v"],
  ];
  const block = e.encode(fields);
  assert.equal(block[0], 0x82);
  // authorization: never indexed (0001), static name 23.
  assert.ok(block.includes(0x1f));
  assert.deepEqual(new HpackDecoder().decode(block), fields);
});

Deno.test("HPACK round trip for any byte-string fields (property)", () => {
  const str = fc.string({ maxLength: 40 }).map((s) =>
    Array.from(s, (c) => String.fromCharCode(c.charCodeAt(0) & 0xff)).join("")
  );
  fc.assert(
    fc.property(fc.array(fc.tuple(str, str), { maxLength: 12 }), (fields) => {
      const block = new HpackEncoder().encode(fields as FieldLine[]);
      assert.deepEqual(new HpackDecoder().decode(block), fields);
    }),
    { numRuns: 300 },
  );
});

Deno.test("HPACK decoder never throws on arbitrary bytes (fuzz)", () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 6 }), (blocks) => {
      const d = new HpackDecoder(256);
      for (const b of blocks) d.decode(b, 1024);
    }),
    { numRuns: 2000 },
  );
});

Deno.test("HPACK dynamic table: an entry larger than the table empties it (§4.4)", () => {
  const t = new HpackDynamicTable(64);
  t.add("a", "b");
  assert.equal(t.length, 1);
  t.add("x".repeat(40), "y");
  assert.equal(t.length, 0);
  assert.equal(t.size, 0);
  for (let i = 0; i < 100; i++) t.add("k", String(i));
  assert.equal(t.get(0)![1], "99");
  assert.ok(t.size <= 64);
});
