import assert from "node:assert/strict";
import { outcomeOfError, outcomeStatus } from "../upstream/outcome.ts";
import { abortedError, UpstreamError } from "../upstream/transport.ts";
import { RequestEnd, requestEnd, type RequestEndKind, requestEndMessage } from "./request_end.ts";

const KINDS: RequestEndKind[] = [
  "client_gone",
  "client_body_failed",
  "connection_closed",
  "shutdown",
  "write_stalled",
];

Deno.test("requestEnd: undefined until aborted; the RequestEnd's kind; any other reason is client_gone", () => {
  const live = new AbortController();
  assert.equal(requestEnd(live.signal), undefined);
  for (const kind of KINDS) {
    const abort = new AbortController();
    abort.abort(new RequestEnd(kind));
    assert.equal(requestEnd(abort.signal), kind);
  }
  // Deno.serve's request.signal (TCP fallback) aborts with its own reason.
  const served = new AbortController();
  served.abort();
  assert.equal(requestEnd(served.signal), "client_gone");
  assert.equal(requestEndMessage(served.signal), "client went away");
});

Deno.test("a request's end maps straight to its outcome: shutdown is 503, every other end the client's (499)", () => {
  const expected: Record<RequestEndKind, string> = {
    client_gone: "client_gone",
    client_body_failed: "client_gone",
    connection_closed: "client_gone",
    shutdown: "shutdown",
    write_stalled: "client_gone",
  };
  for (const kind of KINDS) {
    const abort = new AbortController();
    const cause = new Error("underlying");
    abort.abort(new RequestEnd(kind, { cause }));
    // What a transport rejects with when the signal aborts.
    const err = abortedError(abort.signal);
    assert.equal(err.kind, "aborted");
    assert.equal(err.message, requestEndMessage(abort.signal));
    assert.ok(err.cause instanceof RequestEnd && err.cause.cause === cause);
    // The request's end outranks whatever the transport said.
    for (const said of [err, new UpstreamError("timeout", "slow"), new Error("bug")]) {
      const outcome = outcomeOfError(said, requestEnd(abort.signal));
      assert.equal(outcome, expected[kind], kind);
    }
    assert.equal(
      outcomeStatus(outcomeOfError(err, requestEnd(abort.signal))),
      kind === "shutdown" ? 503 : 499,
    );
  }
  // Without an end, an `aborted` exchange means the transport was closed under it.
  assert.equal(outcomeOfError(new UpstreamError("aborted", "closed"), undefined), "shutdown");
});
