import assert from "node:assert/strict";
import { StreamShare } from "./stream_share.ts";

Deno.test("stream share: up to the limit per pool at once; other pools are separate", () => {
  const share = new StreamShare(2);
  assert.equal(share.claim(0, "a", 1000), true);
  assert.equal(share.claim(4, "a", 1000), true);
  assert.equal(share.claim(8, "b", 1000), true);
  assert.equal(share.claim(0, "a", 1000), true, "a request already holding a slot keeps it");
  const third = share.claim(12, "a", 10);
  assert.ok(third instanceof Promise);
  share.release(0);
  share.release(4);
  share.release(8);
  share.release(12);
  share.close();
});

Deno.test("stream share: a waiter gets the first freed slot of its pool, first come first served", async () => {
  const share = new StreamShare(1);
  assert.equal(share.claim(0, "a", 1000), true);
  const first = share.claim(4, "a", 1000) as Promise<boolean>;
  const second = share.claim(8, "a", 1000) as Promise<boolean>;
  const other = share.claim(12, "b", 1000);
  assert.equal(other, true);
  share.release(0);
  assert.equal(await first, true);
  share.release(4);
  assert.equal(await second, true);
  share.release(8);
  share.release(12);
  assert.equal(share.size, 0);
  assert.equal(share.claim(16, "a", 1000), true, "the count came back down");
  share.release(16);
});

Deno.test("stream share: a waiter is refused after its wait, when cancelled, and when the connection closes", async () => {
  const share = new StreamShare(1);
  assert.equal(share.claim(0, "a", 1000), true);
  assert.equal(await share.claim(4, "a", 10), false, "timed out");
  const abort = new AbortController();
  const cancelled = share.claim(8, "a", 10_000, abort.signal) as Promise<boolean>;
  abort.abort();
  assert.equal(await cancelled, false);
  const closing = share.claim(12, "a", 10_000) as Promise<boolean>;
  share.close();
  assert.equal(await closing, false);
  assert.equal(share.claim(16, "b", 1000), false, "nothing admitted after close");
  share.release(0);
  assert.equal(share.size, 0);
});
