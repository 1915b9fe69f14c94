/**
 * The upstream worker's entry (started by `worker_transport.ts`): runs the
 * in-process transport of the client named by its URL's `client` parameter
 * (`spooky`, the default: `h2_transport.ts`; `node`: `http2_transport.ts`)
 * on this thread and carries its exchanges over the message protocol of
 * `_worker_channel.ts`. Timeouts are
 * enforced here, by that transport; the main thread keeps no timers.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import {
  BodyReceiver,
  BodySender,
  failMessage,
  flatFields,
  type Msg,
  Outbox,
  ownBuffer,
  pairFields,
  reviveError,
} from "./_worker_channel.ts";
import { createClientTransport } from "./create_transport.ts";
import { UpstreamError, type UpstreamRequest, type UpstreamResponse } from "./transport.ts";

/** One exchange this worker carries. */
interface Exchange {
  readonly id: number;
  readonly ac: AbortController;
  /** The request body as it arrives from the main thread, if streamed. */
  receiver: BodyReceiver | null;
  /** The response body as it goes to the main thread, if streamed. */
  sender: BodySender | null;
  requestDone: boolean;
  responseDone: boolean;
}

const transport = createClientTransport(
  new URL(import.meta.url).searchParams.get("client") === "node" ? "node" : "spooky",
);
const exchanges = new Map<number, Exchange>();
const out = new Outbox((msgs, transfer) => self.postMessage(msgs, transfer));

function settle(x: Exchange): void {
  if (x.requestDone && x.responseDone && exchanges.get(x.id) === x) exchanges.delete(x.id);
}

function start(m: Extract<Msg, { t: "req" }>): void {
  const x: Exchange = {
    id: m.id,
    ac: new AbortController(),
    receiver: null,
    sender: null,
    requestDone: m.body !== true,
    responseDone: false,
  };
  exchanges.set(m.id, x);
  let body: Uint8Array | ReadableStream<Uint8Array> | null = null;
  if (m.body === true) {
    x.receiver = new BodyReceiver(out, m.id, () => {
      x.requestDone = true;
      settle(x);
    });
    body = x.receiver.stream;
  } else if (m.body !== null) {
    body = new Uint8Array(m.body);
  }
  const receiver = x.receiver;
  const whole = m.trailers;
  let trailers: (() => Array<[string, string]> | null) | undefined;
  if (receiver !== null) {
    trailers = () => receiver.trailers === undefined ? null : pairFields(receiver.trailers);
  } else if (whole !== undefined) trailers = () => pairFields(whole);
  // A transport that throws instead of rejecting (a bug) fails this
  // exchange alone, not the worker and every exchange on it.
  exchangeSafely({
    address: m.address,
    tls: m.tls,
    method: m.method,
    path: m.path,
    authority: m.authority,
    headers: pairFields(m.headers),
    body,
    trailers,
    timeoutMs: m.timeoutMs,
    signal: x.ac.signal,
  }).then((res) => answer(x, res), (err) => {
    if (exchanges.get(x.id) !== x) return; // aborted by the main thread
    // Not an UpstreamError: a bug here, `internal` (500) on the other side.
    out.send(failMessage(x.id, err));
    x.receiver?.error(err);
    x.requestDone = x.responseDone = true;
    settle(x);
  });
}

function exchangeSafely(req: UpstreamRequest): Promise<UpstreamResponse> {
  try {
    return transport.exchange(req);
  } catch (err) {
    return Promise.reject(err);
  }
}

function answer(x: Exchange, res: UpstreamResponse): void {
  if (exchanges.get(x.id) !== x) {
    if (res.body instanceof ReadableStream) res.body.cancel().catch(() => {});
    return;
  }
  const headers = flatFields(res.headers);
  if (res.body instanceof ReadableStream) {
    out.send({ t: "head", id: x.id, status: res.status, headers, body: true });
    const sender = x.sender = new BodySender(out, x.id, () => {
      x.responseDone = true;
      settle(x);
    }, () => res.trailers);
    sender.run(res.body);
    return;
  }
  const buf = res.body === null ? null : ownBuffer(res.body);
  const head: Msg = { t: "head", id: x.id, status: res.status, headers, body: buf };
  if (res.trailers !== undefined) head.trailers = flatFields(res.trailers);
  out.send(head, buf ?? undefined);
  x.responseDone = true;
  settle(x);
}

function abort(x: Exchange): void {
  exchanges.delete(x.id);
  x.ac.abort();
  x.sender?.cancel();
  x.receiver?.error(new UpstreamError("aborted", "client went away"));
}

function receive(m: Msg): void {
  switch (m.t) {
    case "req":
      return start(m);
    case "release":
      return transport.release(m.address);
    case "ping":
      return out.send({ t: "pong" });
    case "close":
      for (const x of [...exchanges.values()]) abort(x);
      transport.close().finally(() => {
        out.send({ t: "closed" });
        out.flush();
      });
      return;
    case "abort":
    case "data":
    case "end":
    case "error":
    case "credit":
    case "cancel": {
      const x = exchanges.get(m.id);
      if (x === undefined) return; // late message of a finished exchange
      if (m.t === "abort") return abort(x);
      if (m.t === "data") return x.receiver?.data(m.buf);
      if (m.t === "end") return x.receiver?.end(m.trailers);
      if (m.t === "error") return x.receiver?.error(reviveError(m.kind, m.message));
      if (m.t === "credit") return x.sender?.credit(m.n);
      return x.sender?.cancel();
    }
  }
}

self.onmessage = (e: MessageEvent<Msg[]>) => {
  for (const m of e.data) receive(m);
};
// Only now may the main thread send: a message dispatched before the
// listener above exists is dropped (see `ready` in `_worker_channel.ts`).
out.send({ t: "ready" });
