/**
 * A misbehaving HTTP/2 backend for fault tests: raw h2c (prior knowledge)
 * over a TCP socket, its frames written and read by the codec's own framing
 * (`proxy/h2/frames.ts`), that answers every request by breaking RFC 9113 (or
 * RFC 7541, or RFC 9110) in one chosen way.
 *
 * Each {@link EvilCase} names one violation and the status the proxy must
 * answer the client with: 502 when the backend broke the protocol or sent a
 * response no client may accept, 503 when it stalled past the pool's
 * `request_timeout_ms`, 200 for the control cases (things a peer may do).
 * `startEvilBackend(case)` serves one case on its own loopback port, so a
 * proxy configured with one pool per case sends each case a fresh session.
 *
 * A case needs only the stream id of each request HEADERS frame; the
 * request head is also decoded (HPACK, with the proxy's own decoder) and
 * kept, for tests that count which requests reached the backend. It answers
 * SETTINGS and PING as a peer must, so that a violation is the only thing
 * wrong.
 *
 * @example
 * ```ts
 * const evil = await startEvilBackend(EVIL_CASES.find((c) => c.name === "push_promise")!);
 * // route a proxy pool to evil.address, send a request, expect 502
 * await evil.close();
 * ```
 *
 * @module
 */

import { CLIENT_PREFACE, Flag, FrameReader, FrameType, SettingId } from "../../proxy/h2/frames.ts";
import { HpackDecoder } from "../../proxy/h2/hpack.ts";
import { frame, goaway, settings, u32 } from "../../proxy/h2/_test_util.ts";
import { encodePrefixInt } from "../../proxy/hpack_common/prefix_int.ts";
import { writeAll } from "../../shared/bytes.ts";

const ENC = new TextEncoder();

/** An HPACK string literal, never Huffman-coded (RFC 7541 §5.2). */
function hpackString(s: string): Uint8Array {
  const bytes = ENC.encode(s);
  return new Uint8Array([...encodePrefixInt(bytes.length, 7), ...bytes]);
}

/**
 * An HPACK header block of literal fields without indexing and with literal
 * names (RFC 7541 §6.2.2): any name, any value, case kept, nothing indexed.
 */
export function hpackBlock(fields: ReadonlyArray<readonly [string, string]>): Uint8Array {
  const out: number[] = [];
  for (const [name, value] of fields) out.push(0x00, ...hpackString(name), ...hpackString(value));
  return new Uint8Array(out);
}

/** HEADERS with END_HEADERS (and END_STREAM when `end`). */
export function headersFrame(
  streamId: number,
  fields: ReadonlyArray<readonly [string, string]>,
  end: boolean,
): Uint8Array {
  return frame(
    FrameType.HEADERS,
    Flag.END_HEADERS | (end ? Flag.END_STREAM : 0),
    streamId,
    hpackBlock(fields),
  );
}

/** DATA (with END_STREAM when `end`). */
export function dataFrame(streamId: number, body: Uint8Array | string, end: boolean): Uint8Array {
  const bytes = typeof body === "string" ? ENC.encode(body) : body;
  return frame(FrameType.DATA, end ? Flag.END_STREAM : 0, streamId, bytes);
}

/** A complete, valid `200` answer with a small body. */
export function okAnswer(streamId: number, body = "ok"): Uint8Array[] {
  return [
    headersFrame(streamId, [[":status", "200"], ["content-length", String(body.length)]], false),
    dataFrame(streamId, body, true),
  ];
}

/** What a case can do to the connection it is answering on. */
export interface EvilPeer {
  /** Writes bytes (frames or anything else) in order. */
  write(...chunks: Uint8Array[]): Promise<void>;
  /** Closes the TCP connection (after what was written). */
  close(): void;
  /** Waits `ms` (bounded by the backend's close). */
  sleep(ms: number): Promise<void>;
}

/** A frame the backend read, as {@link EvilCase.onFrame} sees it. */
export interface EvilFrame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Uint8Array;
}

/** One misbehaviour and what the proxy must answer for it. */
export interface EvilCase {
  /** Short id (also the pool name and path prefix in the fault test). */
  readonly name: string;
  /** What the backend does, and which rule it breaks. */
  readonly description: string;
  /** The status the client must get: 502 (violation), 503 (stall) or 200 (a control case). */
  readonly expect: 200 | 502 | 503;
  /**
   * The `error` of the proxy's JSON answer, where the case pins the outcome:
   * `invalid_response` (a head no client may be given, whichever layer
   * found it) is never sent again, so the backend sees the request once.
   */
  readonly error?: "invalid_response";
  /**
   * Runs as soon as the connection's preface arrived, before the backend's
   * own SETTINGS; return `false` to send no SETTINGS and stop reading.
   */
  readonly onConnect?: (peer: EvilPeer) => Promise<boolean | void>;
  /**
   * Answers the request HEADERS on `streamId` (every request of the
   * connection); `head` is the decoded request head (empty if it could not
   * be decoded).
   */
  readonly answer?: (peer: EvilPeer, streamId: number, head: RequestHead) => Promise<void>;
  /** Sees every frame the backend reads, in order, as it reads it (it must not block). */
  readonly onFrame?: (peer: EvilPeer, frame: EvilFrame) => void;
  /** The request the client sends (default: a GET without a body). */
  readonly request?: { readonly method: string; readonly bodyBytes: number };
}

/** RFC 9113 §7 error codes the cases use. */
const PROTOCOL_ERROR = 0x1;
const NO_ERROR = 0x0;
const FLOW_CONTROL_ERROR = 0x3;

/** The connection window every HTTP/2 connection starts with (RFC 9113 §6.9.2). */
const INITIAL_CONNECTION_WINDOW = 65_535;

/**
 * A backend that grants a stream window of 1 MiB (SETTINGS and
 * WINDOW_UPDATE) but leaves the connection's at 65,535 octets until the
 * client has used it all and sent nothing more for 300 ms: a client that
 * sends past the connection window gets GOAWAY FLOW_CONTROL_ERROR (RFC 9113
 * §6.9.1), as a strict server answers. It answers 200 once the body ended.
 */
function connectionWindowCase(): EvilCase {
  const conns = new WeakMap<EvilPeer, { received: number; granted: number; broken: boolean }>();
  const ends = new WeakMap<EvilPeer, Map<number, PromiseWithResolvers<void>>>();
  const bodyEnd = (p: EvilPeer, id: number) => {
    const map = ends.get(p) ?? new Map<number, PromiseWithResolvers<void>>();
    ends.set(p, map);
    if (!map.has(id)) map.set(id, Promise.withResolvers<void>());
    return map.get(id)!;
  };
  const data = (p: EvilPeer, f: EvilFrame) => {
    const st = conns.get(p) ?? { received: 0, granted: 0, broken: false };
    conns.set(p, st);
    st.received += f.payload.length;
    if (st.broken) return;
    if (st.received > INITIAL_CONNECTION_WINDOW + st.granted) {
      st.broken = true;
      const why = ENC.encode(`${st.received} octets past a connection window of 65,535`);
      void p.write(goaway(0x7fffffff, FLOW_CONTROL_ERROR, why)).then(() => p.close());
      return;
    }
    if (st.received === INITIAL_CONNECTION_WINDOW && st.granted === 0) {
      // Used up: whatever comes before the grant is an overrun.
      void p.sleep(300).then(() => {
        if (st.broken) return;
        st.granted = 1 << 20;
        return p.write(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(st.granted)));
      });
    }
    if (f.flags & Flag.END_STREAM) bodyEnd(p, f.streamId).resolve();
  };
  return {
    name: "control_connection_window",
    description:
      "a stream window of 1 MiB but the connection's 65,535 octets: a 200,000-byte request body waits for the connection's WINDOW_UPDATE (RFC 9113 §6.9.1; an overrun is FLOW_CONTROL_ERROR)",
    expect: 200,
    request: { method: "POST", bodyBytes: 200_000 },
    onConnect: (p) => p.write(settings([[SettingId.INITIAL_WINDOW_SIZE, 1 << 20]])),
    onFrame: (p, f) => {
      if (f.type === FrameType.DATA) data(p, f);
    },
    answer: async (p, id) => {
      await p.write(frame(FrameType.WINDOW_UPDATE, 0, id, u32((1 << 20) - 65_535)));
      await bodyEnd(p, id).promise;
      await p.write(...okAnswer(id));
    },
  };
}

/** A whole response head of raw HPACK `block`: HEADERS with END_HEADERS and END_STREAM. */
function wholeHead(id: number, block: Uint8Array): Uint8Array {
  return frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, id, block);
}

/**
 * A case that answers every request with one HEADERS frame, END_STREAM, of
 * `fields`: a head no client may accept (RFC 9110, RFC 9113 §8), answered
 * `invalid_response` and never sent again.
 */
function malformedHead(
  name: string,
  description: string,
  fields: ReadonlyArray<readonly [string, string]>,
): EvilCase {
  return {
    name,
    description,
    expect: 502,
    error: "invalid_response",
    answer: (p, id) => p.write(headersFrame(id, fields, true)),
  };
}

/**
 * A case that writes `violation(id)`, then, 100 ms later (the client has read
 * it by then), a valid answer: only a client that noticed the violation fails
 * the request.
 */
function violationBeforeAnswer(
  name: string,
  description: string,
  violation: (id: number) => Uint8Array,
): EvilCase {
  return {
    name,
    description,
    expect: 502,
    answer: async (p, id) => {
      await p.write(violation(id));
      await p.sleep(100);
      await p.write(...okAnswer(id));
    },
  };
}

/** A case that writes `last(id)` and closes the connection 50 ms later, the request unanswered. */
function closeAfter(
  name: string,
  description: string,
  last: (id: number) => Uint8Array[],
): EvilCase {
  return {
    name,
    description,
    expect: 502,
    answer: async (p, id) => {
      await p.write(...last(id));
      await p.sleep(50);
      p.close();
    },
  };
}

/**
 * The corpus. Each case breaks exactly one rule on an otherwise well-behaved
 * connection; control cases (`expect: 200`) do things a backend may do.
 */
export const EVIL_CASES: readonly EvilCase[] = [
  {
    name: "control_ok",
    description: "a well-formed answer (the corpus's own sanity check)",
    expect: 200,
    answer: (p, id) => p.write(...okAnswer(id)),
  },
  {
    name: "control_unknown_frame",
    description: "an unknown frame type 0xfa before the answer (RFC 9113 §4.1: must be ignored)",
    expect: 200,
    answer: (p, id) => p.write(frame(0xfa, 0, id, new Uint8Array(8)), ...okAnswer(id)),
  },
  {
    name: "control_informational",
    description: "103 Early Hints, then 200 (RFC 9113 §8.1: 1xx heads before the final one)",
    expect: 200,
    answer: (p, id) =>
      p.write(
        headersFrame(id, [[":status", "103"], ["link", "</a.css>; rel=preload"]], false),
        ...okAnswer(id),
      ),
  },
  // #32: a client whose sendData forgets the connection window (the mutant
  // drops it from the minimum) sends the whole body at once and gets a 502.
  connectionWindowCase(),
  // #32: a client without the bound on frames that carry nothing (the mutant
  // disables it) answers 200 after the flood.
  {
    name: "idle_frame_flood",
    description:
      "10,001 frames of an unknown type in a row, then the answer: a flood of frames that carry nothing (the client's bound is 10,000; ENHANCE_YOUR_CALM)",
    expect: 502,
    answer: (p, id) => {
      const flood = new Uint8Array(9 * 10_001);
      for (let i = 0; i < 10_001; i++) flood.set(frame(0xfa, 0, id, new Uint8Array(0)), i * 9);
      return p.write(flood, ...okAnswer(id));
    },
  },
  {
    name: "push_promise",
    description:
      "PUSH_PROMISE although the client sent ENABLE_PUSH 0 (RFC 9113 §8.4: PROTOCOL_ERROR)",
    expect: 502,
    answer: (p, id) => {
      const pushed = hpackBlock([
        [":method", "GET"],
        [":scheme", "http"],
        [":path", "/pushed"],
        [":authority", "x"],
      ]);
      const promised = new Uint8Array([0, 0, 0, 2, ...pushed]);
      return p.write(
        frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, id, promised),
        ...okAnswer(id),
      );
    },
  },
  {
    name: "data_on_stream_0",
    description: "DATA on stream 0 (RFC 9113 §6.1: connection error PROTOCOL_ERROR)",
    expect: 502,
    answer: (p, id) => p.write(dataFrame(0, "x", false), ...okAnswer(id)),
  },
  {
    name: "headers_on_stream_0",
    description: "HEADERS on stream 0 (RFC 9113 §6.2: connection error PROTOCOL_ERROR)",
    expect: 502,
    answer: (p) => p.write(headersFrame(0, [[":status", "200"]], true)),
  },
  {
    name: "bad_hpack_index",
    description:
      "HEADERS referencing index 70 of an empty dynamic table (RFC 7541 §2.3.3: COMPRESSION_ERROR)",
    expect: 502,
    answer: (p, id) => p.write(wholeHead(id, encodePrefixInt(70, 7, 0x80))),
  },
  {
    name: "hpack_index_0",
    description: "HEADERS with indexed field 0 (RFC 7541 §6.1: decoding error)",
    expect: 502,
    answer: (p, id) => p.write(wholeHead(id, new Uint8Array([0x80]))),
  },
  {
    name: "hpack_table_size_over_limit",
    description:
      "a dynamic table size update above the client's SETTINGS_HEADER_TABLE_SIZE (RFC 7541 §6.3)",
    expect: 502,
    answer: (p, id) =>
      p.write(
        wholeHead(
          id,
          new Uint8Array([
            ...encodePrefixInt(1 << 30, 5, 0x20),
            ...hpackBlock([[":status", "200"]]),
          ]),
        ),
      ),
  },
  {
    name: "oversized_frame",
    description:
      "a 65,537-byte frame (of an unknown type, which would be ignored), one past the client's 65,536 SETTINGS_MAX_FRAME_SIZE, before a valid answer (RFC 9113 §4.2: FRAME_SIZE_ERROR)",
    expect: 502,
    answer: (p, id) => p.write(frame(0xfa, 0, id, new Uint8Array(65_537)), ...okAnswer(id)),
  },
  violationBeforeAnswer(
    "window_overflow_connection",
    "WINDOW_UPDATE on stream 0 taking the window above 2^31-1 (RFC 9113 §6.9.1: FLOW_CONTROL_ERROR)",
    () => frame(FrameType.WINDOW_UPDATE, 0, 0, u32(0x7fffffff)),
  ),
  violationBeforeAnswer(
    "window_overflow_stream",
    "WINDOW_UPDATE on the request's stream taking its window above 2^31-1 (RFC 9113 §6.9.1)",
    (id) => frame(FrameType.WINDOW_UPDATE, 0, id, u32(0x7fffffff)),
  ),
  violationBeforeAnswer(
    "window_update_zero",
    "WINDOW_UPDATE with increment 0 on stream 0 (RFC 9113 §6.9: connection error PROTOCOL_ERROR)",
    () => frame(FrameType.WINDOW_UPDATE, 0, 0, u32(0)),
  ),
  violationBeforeAnswer(
    "rst_stream_0",
    "RST_STREAM on stream 0 (RFC 9113 §6.4: connection error PROTOCOL_ERROR)",
    () => frame(FrameType.RST_STREAM, 0, 0, u32(PROTOCOL_ERROR)),
  ),
  violationBeforeAnswer(
    "settings_enable_push_2",
    "SETTINGS_ENABLE_PUSH 2 (RFC 9113 §6.5.2: PROTOCOL_ERROR)",
    () => settings([[SettingId.ENABLE_PUSH, 2]]),
  ),
  violationBeforeAnswer(
    "settings_initial_window_too_big",
    "SETTINGS_INITIAL_WINDOW_SIZE 2^31 (RFC 9113 §6.5.2: FLOW_CONTROL_ERROR)",
    () => settings([[SettingId.INITIAL_WINDOW_SIZE, 0x80000000]]),
  ),
  violationBeforeAnswer(
    "settings_max_frame_too_small",
    "SETTINGS_MAX_FRAME_SIZE 16,383 (RFC 9113 §6.5.2: PROTOCOL_ERROR)",
    () => settings([[SettingId.MAX_FRAME_SIZE, 16_383]]),
  ),
  violationBeforeAnswer(
    "settings_bad_length",
    "SETTINGS whose length is not a multiple of 6 (RFC 9113 §6.5: FRAME_SIZE_ERROR)",
    () => frame(FrameType.SETTINGS, 0, 0, new Uint8Array(5)),
  ),
  violationBeforeAnswer(
    "settings_on_stream",
    "SETTINGS on the request's stream (RFC 9113 §6.5: connection error PROTOCOL_ERROR)",
    (id) => frame(FrameType.SETTINGS, 0, id, new Uint8Array(0)),
  ),
  {
    name: "http1_reply",
    description: "an HTTP/1.1 response instead of the server preface (RFC 9113 §3.4)",
    expect: 502,
    onConnect: async (p) => {
      await p.write(
        ENC.encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"),
      );
      p.close();
      return false;
    },
  },
  closeAfter(
    "goaway_mid_response",
    "HEADERS and part of a declared 1,000-byte body, then GOAWAY PROTOCOL_ERROR and close",
    (id) => [
      headersFrame(id, [[":status", "200"], ["content-length", "1000"]], false),
      dataFrame(id, new Uint8Array(100), false),
      goaway(id, PROTOCOL_ERROR),
    ],
  ),
  closeAfter(
    "goaway_then_close",
    "GOAWAY NO_ERROR naming the request's stream as processed, then close without answering",
    (id) => [goaway(id, NO_ERROR)],
  ),
  violationBeforeAnswer(
    "headers_on_even_stream",
    "HEADERS on server-initiated stream 2 never promised (RFC 9113 §5.1.1: PROTOCOL_ERROR)",
    () => headersFrame(2, [[":status", "200"]], true),
  ),
  violationBeforeAnswer(
    "continuation_without_headers",
    "CONTINUATION on the request's stream with no HEADERS before it (RFC 9113 §6.10: PROTOCOL_ERROR)",
    (id) => frame(FrameType.CONTINUATION, Flag.END_HEADERS, id, hpackBlock([[":status", "200"]])),
  ),
  {
    name: "interleaved_headers",
    description:
      "HEADERS without END_HEADERS, then a DATA frame before its CONTINUATION (RFC 9113 §6.10: PROTOCOL_ERROR)",
    expect: 502,
    answer: (p, id) =>
      p.write(
        frame(FrameType.HEADERS, 0, id, hpackBlock([[":status", "200"]])),
        dataFrame(id, "x", true),
      ),
  },
  {
    name: "data_before_headers",
    description: "DATA on the request's stream before any HEADERS (RFC 9113 §8.1: malformed)",
    expect: 502,
    answer: (p, id) => p.write(dataFrame(id, "early", true)),
  },
  closeAfter(
    "truncated_frame_then_close",
    "a HEADERS frame header claiming 100 bytes, 10 sent, then close",
    (id) => [frame(FrameType.HEADERS, Flag.END_HEADERS, id, new Uint8Array(10), 100)],
  ),
  {
    name: "close_without_answer",
    description: "the connection closed right after the request arrived",
    expect: 502,
    answer: (p) => Promise.resolve(p.close()),
  },
  {
    name: "rst_stream_internal",
    description: "RST_STREAM INTERNAL_ERROR on the request's stream before any answer",
    expect: 502,
    answer: (p, id) => p.write(frame(FrameType.RST_STREAM, 0, id, u32(0x2))),
  },
  malformedHead("status_099", ":status 099 (RFC 9110 §15: status codes are 100-599)", [
    [":status", "099"],
    ["content-length", "0"],
  ]),
  malformedHead("status_600", ":status 600 (RFC 9110 §15: status codes are 100-599)", [
    [":status", "600"],
    ["content-length", "0"],
  ]),
  malformedHead("status_101", ":status 101 (RFC 9113 §8.6: no Upgrade in HTTP/2)", [
    [":status", "101"],
  ]),
  malformedHead("status_not_a_number", ":status 2x0 (RFC 9113 §8.3.2: a three-digit code)", [
    [":status", "2x0"],
    ["content-length", "0"],
  ]),
  malformedHead(
    "status_missing",
    "a response HEADERS without :status (RFC 9113 §8.3.2: malformed)",
    [["content-length", "0"]],
  ),
  malformedHead("status_twice", "two :status fields (RFC 9113 §8.3: malformed)", [
    [":status", "200"],
    [":status", "204"],
  ]),
  malformedHead(
    "request_pseudo_in_response",
    "a :path pseudo-header in a response (RFC 9113 §8.3: malformed)",
    [[":status", "200"], [":path", "/x"], ["content-length", "0"]],
  ),
  malformedHead(
    "pseudo_after_regular",
    ":status after a regular field (RFC 9113 §8.3: malformed)",
    [["content-length", "0"], [":status", "200"]],
  ),
  malformedHead(
    "uppercase_header_name",
    "a field named X-Evil (RFC 9113 §8.2.1: uppercase names are malformed)",
    [[":status", "200"], ["X-Evil", "1"], ["content-length", "0"]],
  ),
  malformedHead(
    "connection_header",
    "a connection: close field (RFC 9113 §8.2.2: connection-specific fields are malformed)",
    [[":status", "200"], ["connection", "close"], ["content-length", "0"]],
  ),
  malformedHead(
    "transfer_encoding_header",
    "transfer-encoding: chunked (RFC 9113 §8.2.2: connection-specific)",
    [[":status", "200"], ["transfer-encoding", "chunked"]],
  ),
  malformedHead(
    "keep_alive_header",
    "keep-alive: timeout=5 (RFC 9113 §8.2.2: connection-specific)",
    [[":status", "200"], ["keep-alive", "timeout=5"], ["content-length", "0"]],
  ),
  malformedHead(
    "header_value_crlf",
    "a field value with CR LF (RFC 9113 §8.2.1: malformed; response splitting)",
    [[":status", "200"], ["x-split", "a\r\nset-cookie: evil=1"], ["content-length", "0"]],
  ),
  malformedHead(
    "header_name_space",
    "a field name with a space (RFC 9113 §8.2.1: malformed)",
    [[":status", "200"], ["x evil", "1"], ["content-length", "0"]],
  ),
  malformedHead(
    "header_name_not_token",
    "a field named x(y) (RFC 9110 §5.1: a field name is a token)",
    [[":status", "200"], ["x(y)", "1"], ["content-length", "0"]],
  ),
  malformedHead(
    "header_value_control",
    "a field value with a control character 0x01 (RFC 9110 §5.5: invalid)",
    [[":status", "200"], ["x-ctl", "a\x01b"], ["content-length", "0"]],
  ),
  malformedHead(
    "te_not_trailers",
    "te: gzip in a response (RFC 9113 §8.2.2: te may only be trailers)",
    [[":status", "200"], ["te", "gzip"], ["content-length", "0"]],
  ),
  {
    name: "content_length_mismatch",
    description: "content-length 10 with 5 body bytes and END_STREAM (RFC 9113 §8.1.1: malformed)",
    expect: 502,
    answer: (p, id) =>
      p.write(
        headersFrame(id, [[":status", "200"], ["content-length", "10"]], false),
        dataFrame(id, "12345", true),
      ),
  },
  {
    name: "content_length_twice",
    description: "two different content-length values (RFC 9110 §8.6: invalid)",
    expect: 502,
    error: "invalid_response",
    answer: (p, id) =>
      p.write(
        headersFrame(
          id,
          [[":status", "200"], ["content-length", "2"], ["content-length", "3"]],
          false,
        ),
        dataFrame(id, "ok", true),
      ),
  },
  {
    name: "trailer_with_pseudo",
    description: "trailers carrying :status (RFC 9113 §8.1: pseudo-headers only in the head)",
    expect: 502,
    answer: (p, id) =>
      p.write(
        headersFrame(id, [[":status", "200"], ["content-length", "2"]], false),
        dataFrame(id, "ok", false),
        headersFrame(id, [[":status", "500"]], true),
      ),
  },
  {
    name: "stall",
    description: "the request is never answered (the pool's request_timeout_ms applies)",
    expect: 503,
    answer: () => Promise.resolve(),
  },
];

/** A request head as the backend decoded it: pseudo-headers first, names lowercase. */
export type RequestHead = ReadonlyArray<readonly [string, string]>;

/** The value of field `name` in `head`, or `undefined`. */
export function fieldOf(head: RequestHead, name: string): string | undefined {
  return head.find(([n]) => n === name)?.[1];
}

/** A running evil backend. */
export interface EvilBackend {
  /** The case it serves. */
  readonly case: EvilCase;
  /** `127.0.0.1:port`. */
  readonly address: string;
  readonly port: number;
  /** TCP connections accepted so far. */
  readonly connections: () => number;
  /** Request HEADERS frames seen so far. */
  readonly requests: () => number;
  /** Every request head seen so far, in order of arrival. */
  readonly heads: () => readonly RequestHead[];
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/** Starts a backend serving `evil` on a free loopback port. */
export function startEvilBackend(evil: EvilCase): EvilBackend {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let connections = 0;
  let requests = 0;
  const heads: RequestHead[] = [];
  let closed = false;
  const closing = Promise.withResolvers<void>();

  const serve = async (conn: Deno.Conn) => {
    connections++;
    conns.add(conn);
    let open = true;
    const peer: EvilPeer = {
      async write(...chunks) {
        for (const c of chunks) {
          if (!open) return;
          try {
            await writeAll(conn, c);
          } catch {
            open = false;
          }
        }
      },
      close() {
        if (!open) return;
        open = false;
        try {
          conn.close();
        } catch { /* already closed */ }
      },
      sleep: (ms) =>
        new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          closing.promise.then(() => {
            clearTimeout(t);
            resolve();
          });
        }),
    };
    const buf = new Uint8Array(64 * 1024);
    const frames = new FrameReader();
    const decoder = new HpackDecoder();
    /** The header block of a request HEADERS frame whose CONTINUATION is still to come. */
    let block: { sid: number; bytes: Uint8Array } | null = null;
    const requestHead = (bytes: Uint8Array): RequestHead => {
      try {
        const fields = decoder.decode(bytes);
        return Array.isArray(fields) ? fields : [];
      } catch {
        return [];
      }
    };
    const startAnswer = (sid: number, head: RequestHead) => {
      requests++;
      heads.push(head);
      // Answers run concurrently, as a server's handlers would.
      evil.answer?.(peer, sid, head).catch(() => {});
    };
    /** The next bytes the client sent, or null once it is gone. */
    const read = async (): Promise<Uint8Array | null> => {
      try {
        const n = await conn.read(buf);
        return n === null ? null : buf.subarray(0, n);
      } catch {
        return null;
      }
    };
    try {
      let chunk: Uint8Array | null = new Uint8Array(0);
      while (chunk.length < CLIENT_PREFACE.length) {
        const more: Uint8Array | null = await read();
        if (more === null) return;
        chunk = new Uint8Array([...chunk, ...more]);
      }
      chunk = chunk.subarray(CLIENT_PREFACE.length);
      if (evil.onConnect !== undefined && (await evil.onConnect(peer)) === false) return;
      await peer.write(settings([[SettingId.MAX_CONCURRENT_STREAMS, 100]]));
      for (; chunk !== null; chunk = open ? await read() : null) {
        frames.begin(chunk);
        while (frames.header() && frames.whole) {
          const { type, flags, stream: sid } = frames;
          const payload = frames.buf.slice(frames.start, frames.end);
          frames.advance();
          evil.onFrame?.(peer, { type, flags, streamId: sid, payload });
          if (type === FrameType.SETTINGS && (flags & Flag.ACK) === 0) {
            await peer.write(settings([], true));
          } else if (type === FrameType.PING && (flags & Flag.ACK) === 0) {
            await peer.write(frame(FrameType.PING, Flag.ACK, 0, payload));
          } else if (type === FrameType.HEADERS && sid % 2 === 1) {
            const bytes = headerBlockOf(flags, payload);
            if (flags & Flag.END_HEADERS) startAnswer(sid, requestHead(bytes));
            else block = { sid, bytes };
          } else if (type === FrameType.CONTINUATION && block !== null && block.sid === sid) {
            const before: Uint8Array = block.bytes;
            const bytes = new Uint8Array(before.length + payload.length);
            bytes.set(before);
            bytes.set(payload, before.length);
            block = (flags & Flag.END_HEADERS) ? null : { sid, bytes };
            if (block === null) startAnswer(sid, requestHead(bytes));
          }
        }
        frames.keepRest();
      }
    } finally {
      peer.close();
      conns.delete(conn);
    }
  };

  const accepting = (async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        return;
      }
      if (closed) {
        conn.close();
        return;
      }
      serve(conn).catch(() => {});
    }
  })();

  const addr = listener.addr as Deno.NetAddr;
  return {
    case: evil,
    address: `127.0.0.1:${addr.port}`,
    port: addr.port,
    connections: () => connections,
    requests: () => requests,
    heads: () => heads,
    async close() {
      if (closed) return;
      closed = true;
      closing.resolve();
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* already closed */ }
      }
      await accepting;
    },
  };
}

/** The header block fragment of a HEADERS frame's payload: padding and priority removed (RFC 9113 §6.2). */
function headerBlockOf(flags: number, payload: Uint8Array): Uint8Array {
  let start = 0;
  let end = payload.length;
  if (flags & Flag.PADDED) {
    end -= payload[0];
    start = 1;
  }
  if (flags & Flag.PRIORITY) start += 5;
  return payload.subarray(start, Math.max(start, end));
}
