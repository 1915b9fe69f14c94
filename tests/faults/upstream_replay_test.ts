/**
 * Fault test (issue #35 item 1): a request the backend has answered is never
 * sent again. Raw HTTP/2 backends (`tests/support/evil_h2_backend.ts`) answer
 * every request in one refusal shape, and record each request head they see:
 *
 * - a response head (200, `content-length: 100`) and part of the body, then
 *   RST_STREAM REFUSED_STREAM;
 * - a response head, then GOAWAY with last stream id 0;
 * - a 103 (Early Hints), then RST_STREAM REFUSED_STREAM;
 * - a 103, then GOAWAY with last stream id 0;
 * - RST_STREAM REFUSED_STREAM before any head (a true refusal, RFC 9113 §8.7).
 *
 * What is counted, per POST (each carries its own `x-request-id`):
 * a *delivery* is a backend seeing the request's HEADERS; a delivery is
 * *processed* when that backend began to answer it (sent a response head).
 * The lying shapes process every delivery; the true refusal processes none;
 * the well-behaved backend processes all.
 *
 * Each shape runs with one backend, and with two (the liar first in
 * round-robin for some of the requests, a well-behaved one second):
 *
 * - after a head, every POST is delivered exactly once, in total: the liar's
 *   answer is 502 (`protocol`, counted against it), never a replay and never
 *   the next backend;
 * - refused before a head, a POST may be sent again (it was not processed):
 *   with two backends it is processed exactly once and answered 200; with one
 *   it is processed by nobody (delivered three times: the first try and two
 *   immediate replays) and answered 502.
 */
import assert from "node:assert/strict";
import { FrameType } from "../../proxy/h2/frames.ts";
import { frame, goaway, u32 } from "../../proxy/h2/_test_util.ts";
import {
  dataFrame,
  type EvilBackend,
  type EvilPeer,
  fieldOf,
  headersFrame,
  okAnswer,
  startEvilBackend,
} from "../support/evil_h2_backend.ts";
import { H3TestClient } from "../support/h3_client.ts";
import { startProxy, testCerts } from "../support/proxy_process.ts";
import { withTimeout } from "../support/wait.ts";

const REFUSED_STREAM = 0x7;
const NO_ERROR = 0x0;

/** One way of refusing a request; `processes`: whether the backend began to answer it first. */
interface Shape {
  readonly name: string;
  readonly processes: boolean;
  readonly answer: (peer: EvilPeer, id: number) => Promise<void>;
}

const FINAL_HEAD = [[":status", "200"], ["content-length", "100"]] as const;
const EARLY_HINTS = [[":status", "103"], ["link", "</a.css>; rel=preload"]] as const;
const rst = (id: number) => frame(FrameType.RST_STREAM, 0, id, u32(REFUSED_STREAM));
const goaway0 = () => goaway(0, NO_ERROR);

const SHAPES: readonly Shape[] = [
  {
    name: "head_and_partial_body_then_refused_stream",
    processes: true,
    answer: (p, id) =>
      p.write(headersFrame(id, FINAL_HEAD, false), dataFrame(id, "partial", false), rst(id)),
  },
  {
    name: "head_then_goaway_0",
    processes: true,
    answer: (p, id) => p.write(headersFrame(id, FINAL_HEAD, false), goaway0()),
  },
  {
    name: "1xx_then_refused_stream",
    processes: true,
    answer: (p, id) => p.write(headersFrame(id, EARLY_HINTS, false), rst(id)),
  },
  {
    name: "1xx_then_goaway_0",
    processes: true,
    answer: (p, id) => p.write(headersFrame(id, EARLY_HINTS, false), goaway0()),
  },
  {
    name: "refused_stream_before_head",
    processes: false,
    answer: (p, id) => p.write(rst(id)),
  },
];

/** POSTs per pool; with two backends in round-robin some hit the liar first. */
const POSTS = 4;

interface Pools {
  readonly shape: Shape;
  /** The pool with the liar alone. */
  readonly alone: EvilBackend;
  /** The pool with a liar first and a well-behaved backend. */
  readonly liar: EvilBackend;
  readonly good: EvilBackend;
}

function startPools(shape: Shape): Pools {
  const liar = (role: string) =>
    startEvilBackend({
      name: `${shape.name}_${role}`,
      description: shape.name,
      expect: 502,
      answer: shape.answer,
    });
  return {
    shape,
    alone: liar("alone"),
    liar: liar("liar"),
    good: startEvilBackend({
      name: `${shape.name}_good`,
      description: "a well-formed answer",
      expect: 200,
      answer: (p, id) => p.write(...okAnswer(id)),
    }),
  };
}

function proxyConfig(all: readonly Pools[]): string {
  const pools = all.map((p) => {
    const n = p.shape.name;
    return `  one_${n}:
    route: {path_prefix: /one/${n}/}
    backends: [{id: ${n}_alone, address: "${p.alone.address}"}]
  two_${n}:
    route: {path_prefix: /two/${n}/}
    backends: [{id: ${n}_liar, address: "${p.liar.address}"}, {id: ${n}_good, address: "${p.good.address}"}]`;
  }).join("\n");
  return `version: 1
listen: {protocol: http3, address: 127.0.0.1, port: 0, tls: {cert: "{{cert}}", key: "{{key}}"}}
load_balancing: {type: round-robin}
passive_health: {consecutive_failures: 1000}
upstream:
${pools}
`;
}

/** How many times `backends` saw the request `id`. */
function deliveries(id: string, ...backends: EvilBackend[]): number {
  return backends.reduce(
    (n, b) => n + b.heads().filter((h) => fieldOf(h, "x-request-id") === id).length,
    0,
  );
}

Deno.test({
  name:
    "#35.1: a POST the backend has answered (a head, 1xx included) is delivered once, whatever refusal follows; one refused before its head is processed at most once",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const all = SHAPES.map(startPools);
    const proxy = await startProxy(proxyConfig(all));
    const client = await H3TestClient.connect(
      proxy.port,
      await Deno.readTextFile((await testCerts()).caPath),
    );
    const wrong: string[] = [];
    const body = new TextEncoder().encode("pay 10");
    const post = (path: string, id: string) =>
      withTimeout(
        client.request({
          head: [
            [":method", "POST"],
            [":scheme", "https"],
            [":authority", `localhost:${proxy.port}`],
            [":path", path],
            ["content-length", String(body.length)],
            ["x-request-id", id],
          ],
          body,
        }),
        20_000,
        `${path} ${id}`,
      );
    try {
      for (const p of all) {
        const { shape } = p;
        // One backend.
        for (let i = 0; i < POSTS; i++) {
          const id = `${shape.name}-one-${i}`;
          const res = await post(`/one/${shape.name}/pay`, id);
          const seen = deliveries(id, p.alone);
          const processed = shape.processes ? seen : 0;
          if (res.status !== 502) wrong.push(`${id}: ${res.status} (want 502)`);
          if (shape.processes && seen !== 1) wrong.push(`${id}: delivered ${seen} times`);
          if (!shape.processes && (processed !== 0 || seen !== 3)) {
            wrong.push(`${id}: delivered ${seen} times (want 3, none processed)`);
          }
        }
        // Two backends: the liar first for some.
        let liarFirst = 0;
        for (let i = 0; i < POSTS; i++) {
          const id = `${shape.name}-two-${i}`;
          const res = await post(`/two/${shape.name}/pay`, id);
          const atLiar = deliveries(id, p.liar);
          const atGood = deliveries(id, p.good);
          const processed = (shape.processes ? atLiar : 0) + atGood;
          if (atLiar > 0) liarFirst++;
          if (processed !== 1) {
            wrong.push(`${id}: processed ${processed} times (liar ${atLiar}, good ${atGood})`);
          }
          if (shape.processes) {
            if (atLiar + atGood !== 1) wrong.push(`${id}: delivered ${atLiar + atGood} times`);
            const want = atLiar === 1 ? 502 : 200;
            if (res.status !== want) wrong.push(`${id}: ${res.status} (want ${want})`);
          } else if (res.status !== 200) {
            wrong.push(`${id}: ${res.status} (want 200: not processed, so sent on)`);
          }
        }
        if (liarFirst === 0) wrong.push(`${shape.name}: no POST reached the liar first`);
      }
      assert.deepEqual(wrong, [], "every POST processed at most once, answered as expected");
      // The liars were blamed as protocol errors, never as `connect`.
      const log = proxy.stderr.join("\n");
      for (const s of SHAPES.filter((s) => s.processes)) {
        assert.match(log, new RegExp(`backend ${s.name}_alone failed \\(protocol\\)`), s.name);
      }
    } finally {
      await client.close();
      await proxy.stop();
      for (const p of all) await Promise.all([p.alone.close(), p.liar.close(), p.good.close()]);
    }
  },
});
