import assert from "node:assert/strict";
import { singleField, withTraceContext } from "./trace_fields.ts";

const CLIENT_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const OURS = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

Deno.test("#31.1: singleField: one value, or none when absent or repeated", () => {
  assert.equal(singleField([["traceparent", "a"], ["x", "y"]], "traceparent"), "a");
  assert.equal(singleField([["x", "y"]], "traceparent"), undefined);
  assert.equal(singleField([["traceparent", "a"], ["traceparent", "b"]], "traceparent"), undefined);
});

Deno.test("#31.1: withTraceContext: the client's traceparent never passes, even when nothing is injected", () => {
  const client: Array<[string, string]> = [["accept", "text/html"], ["traceparent", CLIENT_PARENT]];
  assert.deepEqual(withTraceContext(client, [], true), [["accept", "text/html"]]);
  assert.deepEqual(withTraceContext(client, [["traceparent", OURS]], false), [
    ["accept", "text/html"],
    ["traceparent", OURS],
  ]);
});

Deno.test("#31.1: withTraceContext: tracestate passes from a trusted client only; injected fields replace the client's", () => {
  const client: Array<[string, string]> = [
    ["traceparent", CLIENT_PARENT],
    ["tracestate", "vendor=x"],
    ["baggage", "k=v"],
  ];
  assert.deepEqual(withTraceContext(client, [["traceparent", OURS]], false), [
    ["baggage", "k=v"],
    ["traceparent", OURS],
  ]);
  assert.deepEqual(withTraceContext(client, [["traceparent", OURS]], true), [
    ["tracestate", "vendor=x"],
    ["baggage", "k=v"],
    ["traceparent", OURS],
  ]);
  assert.deepEqual(
    withTraceContext(client, [["traceparent", OURS], ["baggage", "k=v2"]], true),
    [["tracestate", "vendor=x"], ["traceparent", OURS], ["baggage", "k=v2"]],
  );
});
