/**
 * QPACK hot-path benchmarks: `deno bench proxy/h3/qpack/qpack_bench.ts`.
 *
 * @module
 */

import { QpackDecoder } from "./decoder.ts";
import { QpackEncoder } from "./encoder.ts";
import {
  concatBytes,
  encodeIndexedDynamic,
  encodeInsertWithLiteralName,
  encodeInsertWithNameRef,
  encodeSectionPrefix,
  encodeSetCapacity,
} from "./_test_util.ts";
import { staticIndexOf, staticNameIndexOf } from "./static_table.ts";

/** A typical Chromium navigation request (~16 field lines). */
const REQUEST: Array<[string, string]> = [
  [":method", "GET"],
  [":authority", "shop.example.com"],
  [":scheme", "https"],
  [":path", "/products/1234?ref=home&utm_source=newsletter"],
  ["sec-ch-ua", '"Chromium";v="131", "Not_A Brand";v="24"'],
  ["sec-ch-ua-mobile", "?0"],
  ["sec-ch-ua-platform", '"Linux"'],
  ["upgrade-insecure-requests", "1"],
  [
    "user-agent",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
  ],
  [
    "accept",
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
  ],
  ["sec-fetch-site", "same-origin"],
  ["sec-fetch-mode", "navigate"],
  ["sec-fetch-user", "?1"],
  ["sec-fetch-dest", "document"],
  ["referer", "https://shop.example.com/"],
  ["accept-encoding", "gzip, deflate, br, zstd"],
  ["accept-language", "en-US,en;q=0.9,de;q=0.8"],
  [
    "cookie",
    "session=9f8e7d6c5b4a39281706f5e4d3c2b1a0; _ga=GA1.1.123456789.1700000000; theme=dark; consent=yes",
  ],
  ["priority", "u=0, i"],
];

/** A typical response (8 field lines). */
const RESPONSE: Array<[string, string]> = [
  [":status", "200"],
  ["content-type", "text/html; charset=utf-8"],
  ["content-length", "48213"],
  ["date", "Sun, 22 Nov 2026 02:30:00 GMT"],
  ["cache-control", "private, max-age=0"],
  ["etag", '"5f3a-18c2b9d1e40"'],
  ["vary", "accept-encoding"],
  ["alt-svc", 'h3=":443"; ma=86400'],
];

// Static-table-only request block (what the first request on a connection looks like).
const staticBlock = new QpackEncoder().encodeSection(REQUEST);
const staticDecoder = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });

// Dynamic-table request block: every field inserted once, then referenced (later requests).
const dynamicDecoder = new QpackDecoder({ maxTableCapacity: 16384, maxBlockedStreams: 16 });
const inserts = [encodeSetCapacity(16384)];
for (const [name, value] of REQUEST) {
  const s = staticNameIndexOf(name);
  inserts.push(
    s >= 0 && staticIndexOf(name, value) < 0
      ? encodeInsertWithNameRef(true, s, value)
      : encodeInsertWithLiteralName(name, value),
  );
}
dynamicDecoder.pushEncoderStream(concatBytes(...inserts));
const n = REQUEST.length;
const dynamicBlock = concatBytes(
  encodeSectionPrefix(n, n, 512),
  ...REQUEST.map((_, i) => encodeIndexedDynamic(n - 1 - i)),
);

const encoder = new QpackEncoder();

Deno.bench("decode Chromium request, static table + Huffman literals", {
  group: "decode",
  baseline: true,
}, () => {
  staticDecoder.decodeSection(0, staticBlock);
});

Deno.bench("decode Chromium request, all dynamic references", { group: "decode" }, () => {
  dynamicDecoder.decodeSection(0, dynamicBlock);
  dynamicDecoder.takeDecoderStreamBytes();
});

Deno.bench("encode typical response (8 fields)", { group: "encode" }, () => {
  encoder.encodeSection(RESPONSE);
});

Deno.bench("encode Chromium request (19 fields)", { group: "encode" }, () => {
  encoder.encodeSection(REQUEST);
});
