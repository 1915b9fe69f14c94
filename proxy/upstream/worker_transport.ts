/**
 * {@link UpstreamTransport} on worker threads: the HTTP/2 exchanges with
 * backends run in `upstream_worker.ts` (each worker runs the in-process
 * `createHttp2Transport()`), so the QUIC thread only does HTTP/3.
 *
 * - Each backend address is pinned to one worker (the one with the fewest
 *   addresses when first seen), so its pooled HTTP/2 session lives there.
 * - Messages are batched: one `postMessage` per event-loop turn per worker,
 *   buffers transferred (`_worker_channel.ts` has the protocol). A new
 *   worker gets nothing until it says `ready`: Deno drops a message that
 *   reaches a worker before its listener exists.
 * - Bodies stream both ways with bounded credit (256 KiB per direction per
 *   exchange); a small complete response body comes whole with the head.
 * - Timeouts run inside the worker; the main thread keeps no per-request
 *   timer. Client abort crosses as an `abort` message (RST_STREAM CANCEL).
 * - A worker that dies, for any reason, fails only the exchanges it carried,
 *   with kind `worker` (502; an idempotent request is retried once, as after
 *   a backend reset; no backend is blamed, since the cause is not tied to
 *   one). Its addresses move to the other workers at once; with none left
 *   (one worker, or all restarting) a request waits for the restart, at
 *   most {@link RESTART_WAIT_MS}. `node:http2` errors that escape their
 *   session are caught inside the worker (`contain_http2.ts`) and fail only
 *   that session's streams, so a misbehaving backend does not kill it.
 * - A worker is also dead when it stops answering: while it carries
 *   exchanges, the main thread pings it every {@link PING_PERIOD_MS}; one
 *   that has not answered for {@link UNRESPONSIVE_MS} (wedged in a loop, or
 *   gone without an `error` event, which Deno does not always deliver;
 *   {@link STARTUP_MS} before its first word) is terminated and handled as
 *   above. Without this, its exchanges would wait
 *   for ever: their timeouts run in the worker.
 *
 * @module
 */

import { settledWithin } from "../../shared/deadline.ts";
import {
  BodyReceiver,
  BodySender,
  flatFields,
  type Msg,
  Outbox,
  pairFields,
  reviveError,
} from "./_worker_channel.ts";
import {
  abortedError,
  UpstreamError,
  type UpstreamRequest,
  type UpstreamResponse,
  type UpstreamTransport,
} from "./transport.ts";

/** A worker that dies sooner than this after its start is restarted only after this pause (ms). */
export const RESTART_PAUSE_MS = 1_000;

/** Longest wait of a request for a worker when none is running (all restarting): twice the pause. */
export const RESTART_WAIT_MS = 2 * RESTART_PAUSE_MS;

/** How often a worker that carries exchanges is pinged (ms). */
export const PING_PERIOD_MS = 1_000;

/** A worker that carries exchanges and has not answered a ping for this long is dead (ms). */
export const UNRESPONSIVE_MS = 10_000;

/**
 * The same limit for a worker that has not said a word since it started
 * (ms): it may still be loading its modules, slowly on a busy machine.
 */
export const STARTUP_MS = 30_000;

/** Options of {@link createWorkerTransport}. */
export interface WorkerTransportOptions {
  /** How many worker threads carry exchanges (at least 1). */
  workers: number;
  /** The worker module (tests substitute one); default `./upstream_worker.ts`. */
  workerUrl?: string | URL;
  /** Called when a worker died and was replaced (for a log line). */
  onWorkerRestart?: (index: number, error: unknown) => void;
  /**
   * A worker that dies sooner than this after its start is restarted only
   * after this pause (ms); requests wait at most twice it when no worker
   * runs. Default {@link RESTART_PAUSE_MS}; tests shorten or lengthen it.
   */
  restartPauseMs?: number;
  /**
   * A worker that carries exchanges and has not answered a ping for this
   * long is terminated as dead (ms). Default {@link UNRESPONSIVE_MS}; tests
   * shorten it.
   */
  unresponsiveMs?: number;
}

/** One exchange in flight, as the main thread tracks it. */
interface Pending {
  readonly id: number;
  readonly slot: Slot;
  readonly resolve: (res: UpstreamResponse) => void;
  /** An {@link UpstreamError}, or a plain `Error` for a bug in the worker (`fail` with kind `null`). */
  readonly reject: (err: Error) => void;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | null;
  /** The head arrived (the promise is settled). */
  headDone: boolean;
  /** The response body as it streams in, if any. */
  receiver: BodyReceiver | null;
  /** The response handed over with a streamed body (its trailers come with the body's `end`). */
  response: UpstreamResponse | null;
  /** The request body as it streams out, if any. */
  sender: BodySender | null;
  responseDone: boolean;
  requestDone: boolean;
}

/** One worker thread (replaced when it dies) and the exchanges on it. */
class Slot {
  /** Set by `spawn` before any use. */
  worker!: Worker;
  /** The batch of messages to this worker. */
  out!: Outbox;
  readonly pending = new Map<number, Pending>();
  /** Addresses pinned here. */
  addresses = 0;
  /** Resolves `close()`'s wait for the worker's `closed`. */
  closedAck: (() => void) | null = null;
  /** When the current worker started (a worker that dies young is restarted after a pause). */
  startedAt = 0;
  /** Set while a worker that died young waits to be restarted: its addresses go elsewhere. */
  restart: ReturnType<typeof setTimeout> | undefined;
  /** When the oldest ping this worker has not answered yet went out (`performance.now()`), or -1. */
  pingedAt = -1;
  /**
   * Batches for the current worker held until it is `ready` (it listens),
   * or `null` once it is: {@link UNRESPONSIVE_MS} then applies to its
   * pings, not {@link STARTUP_MS}.
   */
  held: Array<[Msg[], ArrayBuffer[]]> | null = [];

  constructor(readonly index: number) {}
}

/**
 * Creates the worker transport. Workers start at once; `close()` terminates
 * them, so they do not keep the process alive afterwards.
 *
 * @example
 * ```ts
 * const upstream = createWorkerTransport({ workers: 1 });
 * const res = await upstream.exchange({
 *   address: "127.0.0.1:8080", method: "GET", path: "/", authority: "example.com",
 *   headers: [], body: null, timeoutMs: 30_000,
 * });
 * await upstream.close();
 * ```
 */
export function createWorkerTransport(opts: WorkerTransportOptions): UpstreamTransport {
  const url = new URL(opts.workerUrl ?? new URL("./upstream_worker.ts", import.meta.url)).href;
  const pauseMs = opts.restartPauseMs ?? RESTART_PAUSE_MS;
  const waitMs = 2 * pauseMs;
  const unresponsiveMs = opts.unresponsiveMs ?? UNRESPONSIVE_MS;
  const startupMs = Math.max(unresponsiveMs, STARTUP_MS);
  const pins = new Map<string, Slot>();
  let nextId = 1;
  let closed = false;

  const slots: Slot[] = [];
  /** Requests waiting for a worker while none is running. */
  const waiters = new Set<() => void>();
  const spawn = (slot: Slot) => {
    const worker = new Worker(url, { type: "module" });
    slot.worker = worker;
    slot.startedAt = performance.now();
    slot.restart = undefined;
    slot.pingedAt = -1;
    const held: Array<[Msg[], ArrayBuffer[]]> = slot.held = [];
    slot.out = new Outbox((msgs, transfer) => {
      if (slot.held === held) held.push([msgs, transfer]);
      else worker.postMessage(msgs, transfer);
    });
    worker.onmessage = (e: MessageEvent<Msg[]>) => {
      if (slot.worker !== worker) return;
      if (slot.held === held) {
        // Its first message (`ready`): what waited for it goes out, in order.
        slot.held = null;
        for (const [msgs, transfer] of held) worker.postMessage(msgs, transfer);
      }
      slot.pingedAt = -1; // any message shows the worker alive
      for (const m of e.data) receive(slot, m);
    };
    const died = (e: Event) => {
      e.preventDefault();
      const cause = (e as ErrorEvent).error ?? (e as ErrorEvent).message;
      const why = cause instanceof Error ? cause.message : String(cause ?? "unknown");
      retire(slot, worker, why, cause);
    };
    worker.onerror = died;
    worker.onmessageerror = died;
  };

  /**
   * Ends a worker that died (or stopped answering): fails the exchanges it
   * carried with kind `worker`, unpins its addresses and restarts it (after
   * a pause if it died young).
   */
  const retire = (slot: Slot, worker: Worker, why: string, cause: unknown) => {
    if (slot.worker !== worker || slot.restart !== undefined) return;
    worker.terminate();
    for (const p of [...slot.pending.values()]) {
      fail(p, new UpstreamError("worker", `upstream worker died: ${why}`, { cause }));
    }
    // Its addresses are pinned afresh on their next request (their
    // sessions died with the worker).
    for (const [address, s] of pins) if (s === slot) pins.delete(address);
    slot.addresses = 0;
    if (closed) return;
    const again = () => {
      spawn(slot);
      opts.onWorkerRestart?.(slot.index, cause);
      for (const wake of [...waiters]) wake();
    };
    // A worker that cannot even start would otherwise be restarted in a tight loop.
    if (performance.now() - slot.startedAt >= pauseMs) return again();
    slot.restart = setTimeout(again, pauseMs);
  };

  /** Pings the workers that carry exchanges; one that has not answered for `unresponsiveMs` is retired. */
  let pinger: ReturnType<typeof setInterval> | undefined;
  const ping = () => {
    const now = performance.now();
    let busy = false;
    for (const slot of slots) {
      if (slot.restart !== undefined || slot.pending.size === 0) {
        slot.pingedAt = -1;
        continue;
      }
      busy = true;
      if (slot.pingedAt < 0) {
        slot.pingedAt = now;
        slot.out.send({ t: "ping" });
      } else if (now - slot.pingedAt >= (slot.held === null ? unresponsiveMs : startupMs)) {
        const silent = Math.round(now - slot.pingedAt);
        const cause = new Error(`no answer to a ping for ${silent} ms`);
        retire(slot, slot.worker, cause.message, cause);
      }
    }
    if (!busy || closed) {
      clearInterval(pinger);
      pinger = undefined;
    }
  };
  /** Starts the pings (if they are not running): called when a worker takes an exchange. */
  const watch = () => {
    if (pinger === undefined) {
      pinger = setInterval(ping, Math.min(PING_PERIOD_MS, unresponsiveMs / 4));
    }
  };

  for (let i = 0; i < Math.max(1, Math.floor(opts.workers)); i++) {
    const slot = new Slot(i);
    spawn(slot);
    slots.push(slot);
  }

  /** The running worker an address is pinned to (pinned now if need be), or `null` when none runs. */
  const slotFor = (address: string): Slot | null => {
    const pinned = pins.get(address);
    if (pinned !== undefined && pinned.restart === undefined) return pinned;
    let slot: Slot | null = null;
    for (const s of slots) {
      if (s.restart !== undefined) continue;
      if (slot === null || s.addresses < slot.addresses) slot = s;
    }
    if (slot === null) return null;
    slot.addresses++;
    pins.set(address, slot);
    return slot;
  };

  /** Waits (bounded) for a worker to run again, then sends the exchange. */
  const later = async (req: UpstreamRequest): Promise<UpstreamResponse> => {
    const { promise, resolve } = Promise.withResolvers<void>();
    const timer = setTimeout(resolve, waitMs);
    const onAbort = () => resolve();
    waiters.add(resolve);
    req.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await promise;
    } finally {
      clearTimeout(timer);
      waiters.delete(resolve);
      req.signal?.removeEventListener("abort", onAbort);
    }
    if (!closed && !req.signal?.aborted && slots.some((s) => s.restart === undefined)) {
      return exchange(req);
    }
    if (closed) throw new UpstreamError("aborted", "upstream transport closed");
    if (req.signal?.aborted) {
      throw abortedError(req.signal);
    }
    throw new UpstreamError("worker", `no upstream worker running after ${waitMs} ms`);
  };

  /** Forgets the exchange once neither direction has anything left to carry. */
  const settle = (p: Pending) => {
    if (!p.responseDone || !p.requestDone) return;
    p.slot.pending.delete(p.id);
    if (p.onAbort !== null) p.signal?.removeEventListener("abort", p.onAbort);
    p.onAbort = null;
  };

  /** Ends the exchange with `err` on this side (the worker is told separately, if at all). */
  const fail = (p: Pending, err: Error) => {
    if (!p.headDone) {
      p.headDone = true;
      p.reject(err);
    }
    p.receiver?.error(err);
    p.sender?.cancel(err);
    p.responseDone = p.requestDone = true;
    settle(p);
  };

  const receive = (slot: Slot, m: Msg) => {
    if (m.t === "closed") return slot.closedAck?.();
    if (m.t === "pong" || m.t === "ready") return;
    if (!("id" in m)) return;
    const p = slot.pending.get(m.id);
    if (p === undefined) return; // late message of a finished exchange
    switch (m.t) {
      case "head": {
        let body: UpstreamResponse["body"] = null;
        if (m.body === true) {
          p.receiver = new BodyReceiver(slot.out, p.id, () => {
            p.responseDone = true;
            settle(p);
          });
          body = p.receiver.stream;
        } else {
          if (m.body !== null) body = new Uint8Array(m.body);
          p.responseDone = true;
        }
        p.headDone = true;
        const res: UpstreamResponse = { status: m.status, headers: pairFields(m.headers), body };
        if (m.trailers !== undefined) res.trailers = pairFields(m.trailers);
        if (p.receiver !== null) p.response = res;
        p.resolve(res);
        return settle(p);
      }
      case "fail":
        // kind null: a bug in the worker, not the backend's nor the client's doing.
        return fail(p, reviveError(m.kind, m.message));
      case "data":
        return p.receiver?.data(m.buf);
      case "end":
        // The trailers are on the response before its body closes.
        if (m.trailers !== undefined && p.response !== null) {
          p.response.trailers = pairFields(m.trailers);
        }
        return p.receiver?.end(m.trailers);
      case "error":
        return p.receiver?.error(reviveError(m.kind, m.message));
      case "credit":
        return p.sender?.credit(m.n);
      case "cancel":
        return p.sender?.cancel();
    }
  };

  const exchange = (req: UpstreamRequest): Promise<UpstreamResponse> => {
    if (closed) return Promise.reject(new UpstreamError("aborted", "upstream transport closed"));
    const signal = req.signal;
    if (signal?.aborted) {
      return Promise.reject(
        abortedError(signal),
      );
    }
    const slot = slotFor(req.address);
    if (slot === null) return later(req);
    const id = nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<UpstreamResponse>();
    const p: Pending = {
      id,
      slot,
      resolve,
      reject,
      signal,
      onAbort: null,
      headDone: false,
      receiver: null,
      response: null,
      sender: null,
      responseDone: false,
      requestDone: !(req.body instanceof ReadableStream),
    };
    slot.pending.set(id, p);
    watch();
    let body: ArrayBuffer | true | null = null;
    let transfer: ArrayBuffer | undefined;
    let trailers: string[] | undefined;
    if (req.body instanceof Uint8Array) {
      // A copy: the caller may send the same bytes to the next candidate.
      body = transfer = req.body.slice().buffer as ArrayBuffer;
      const t = req.trailers?.();
      if (t != null) trailers = flatFields(t);
    } else if (req.body !== null) {
      body = true;
    }
    slot.out.send({
      t: "req",
      id,
      address: req.address,
      tls: req.tls,
      method: req.method,
      path: req.path,
      authority: req.authority,
      headers: flatFields(req.headers),
      body,
      trailers,
      timeoutMs: req.timeoutMs,
    }, transfer);
    if (req.body instanceof ReadableStream) {
      const sender = p.sender = new BodySender(slot.out, id, () => {
        p.requestDone = true;
        settle(p);
      }, req.trailers);
      sender.run(req.body);
    }
    if (signal !== undefined) {
      p.onAbort = () => {
        if (slot.pending.get(id) !== p) return;
        slot.out.send({ t: "abort", id });
        fail(p, abortedError(signal));
      };
      signal.addEventListener("abort", p.onAbort, { once: true });
    }
    return promise;
  };

  return {
    exchange,
    release(address) {
      const slot = pins.get(address);
      if (slot === undefined) return;
      pins.delete(address);
      slot.addresses--;
      slot.out.send({ t: "release", address });
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(pinger);
      pinger = undefined;
      for (const wake of [...waiters]) wake();
      await Promise.all(slots.map(async (slot) => {
        if (slot.restart !== undefined) return clearTimeout(slot.restart);
        for (const p of [...slot.pending.values()]) {
          slot.out.send({ t: "abort", id: p.id });
          fail(p, new UpstreamError("aborted", "upstream transport closed"));
        }
        const acked = new Promise<void>((resolve) => slot.closedAck = resolve);
        slot.out.send({ t: "close" });
        slot.out.flush();
        await settledWithin(acked, 2_000);
        slot.worker.terminate();
      }));
    },
  };
}
