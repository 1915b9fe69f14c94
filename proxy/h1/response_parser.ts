/**
 * The incremental HTTP/1.1 response parser (RFC 9112) of one exchange:
 * interim responses (1xx) before the final one, its head, its content framed
 * by RFC 9112 §6.3 (none, Content-Length, chunked with trailers, or until
 * the connection closes) and whether the connection may carry another
 * request. Sans-IO: it is given bytes (`push`) and the end of the stream
 * (`eof`) and returns events; a violation is an `error` event, never an
 * exception. Every buffer it keeps is bounded by {@link H1ParserOptions}.
 *
 * @example
 * ```ts
 * import { H1ResponseParser } from "./response_parser.ts";
 * const p = new H1ResponseParser("GET");
 * p.push(new TextEncoder().encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"));
 * // [{ type: "head", … }, { type: "data", … }, { type: "end", keepAlive: true }]
 * ```
 *
 * @module
 */

import { ChunkedDecoder } from "./chunked.ts";
import { interpretHead } from "./head.ts";
import { type Section, type SectionLimits, SectionReader } from "./section.ts";
import { NEED_MORE } from "./lines.ts";
import { fieldTokens, trailerSectionError } from "../http/mod.ts";
import {
  H1_DEFAULTS,
  type H1ErrorKind,
  type H1Event,
  type H1Framing,
  type H1ParserOptions,
} from "./types.ts";

type State = "head" | "length" | "chunked" | "close" | "done";
/** How the parser finished: the response ended, it failed, or the connection changed protocol. */
type Outcome = "end" | "error" | "upgrade";

/** Parses the response to one request sent on an HTTP/1.1 connection. */
export class H1ResponseParser {
  readonly #method: string;
  readonly #options: Readonly<Required<H1ParserOptions>>;
  readonly #limits: SectionLimits;
  #state: State = "head";
  #outcome: Outcome | undefined;
  #section: SectionReader;
  #informational = 0;
  #remaining = 0;
  #chunked: ChunkedDecoder | undefined;
  #keepAlive = false;
  #reusable = false;
  #received = 0;
  #excess = 0;

  /** `method`: the request's method (HEAD and CONNECT change the framing). */
  constructor(method: string, options: H1ParserOptions = {}) {
    this.#method = method;
    this.#options = { ...H1_DEFAULTS, ...options };
    this.#limits = { maxBytes: this.#options.maxHeadBytes, maxFields: this.#options.maxFields };
    this.#section = new SectionReader(true, this.#limits);
  }

  /** Bytes received so far (0 after an `eof` with nothing: the backend never answered). */
  get received(): number {
    return this.#received;
  }

  /** Bytes received outside the response (after its end). */
  get excess(): number {
    return this.#excess;
  }

  /** Whether the connection may carry another request: the response ended cleanly and it persists. */
  get reusable(): boolean {
    return this.#reusable && this.#excess === 0;
  }

  /** Whether the parser expects nothing more (ended, failed or upgraded). */
  get done(): boolean {
    return this.#state === "done";
  }

  /** Parses `input` (the next bytes of the connection); returns what they said, in order. */
  push(input: Uint8Array): H1Event[] {
    this.#received += input.length;
    const events: H1Event[] = [];
    let at = 0;
    while (at < input.length) {
      if (this.#state === "done") {
        if (this.#outcome === "end") this.#noteExcess(input.length - at, events);
        break;
      }
      at = this.#advance(input, at, events);
    }
    return events;
  }

  /** The connection's read side ended: ends a close-delimited body, else fails an unfinished response. */
  eof(): H1Event[] {
    const events: H1Event[] = [];
    if (this.#state === "close") {
      this.#end(events);
    } else if (this.#state !== "done") {
      const where = this.#state === "head" ? "head" : "content";
      this.#fail("protocol", `connection closed before the response ${where} was complete`, events);
    }
    return events;
  }

  /** One step from `at`; returns where the next begins. */
  #advance(input: Uint8Array, at: number, events: H1Event[]): number {
    switch (this.#state) {
      case "head":
        return this.#readHead(input, at, events);
      case "length": {
        const n = Math.min(this.#remaining, input.length - at);
        this.#remaining -= n;
        events.push({ type: "data", data: input.subarray(at, at + n) });
        if (this.#remaining === 0) this.#end(events);
        return at + n;
      }
      case "chunked":
        return this.#readChunked(input, at, events);
      case "close":
        events.push({ type: "data", data: input.subarray(at) });
        return input.length;
      case "done":
        return input.length;
    }
  }

  #readHead(input: Uint8Array, at: number, events: H1Event[]): number {
    const section = this.#section.read(input, at);
    if (section === NEED_MORE) return input.length;
    if (typeof section === "string") return this.#fail("protocol", section, events, input);
    this.#section = new SectionReader(true, this.#limits);
    return this.#onHead(section, input, events);
  }

  #onHead(section: Section, input: Uint8Array, events: H1Event[]): number {
    const line = section.statusLine!;
    const meaning = interpretHead(this.#method, line, section.fields);
    if (typeof meaning === "string") return this.#fail("invalid_response", meaning, events, input);
    const { fields, contentLength, framing, keepAlive } = meaning;
    const { status } = line;
    if (status === 101 || (this.#method === "CONNECT" && status >= 200 && status < 300)) {
      events.push({
        type: "upgrade",
        status,
        fields,
        upgrade: fieldTokens(section.fields, "upgrade"),
        connection: fieldTokens(section.fields, "connection"),
        rest: input.subarray(section.next),
      });
      this.#state = "done";
      this.#outcome = "upgrade";
      return input.length;
    }
    if (status < 200) {
      if (++this.#informational > this.#options.maxInformational) {
        const reason = `more than ${this.#options.maxInformational} informational responses`;
        return this.#fail("protocol", reason, events, input);
      }
      events.push({ type: "informational", status, fields });
      return section.next;
    }
    const { version, reason } = line;
    events.push({
      type: "head",
      head: { status, fields, contentLength, version, reason, framing },
    });
    this.#keepAlive = keepAlive;
    this.#frame(framing, contentLength, events);
    return section.next;
  }

  #frame(framing: H1Framing, contentLength: number, events: H1Event[]): void {
    switch (framing) {
      case "none":
        return this.#end(events);
      case "length":
        if (contentLength === 0) return this.#end(events);
        this.#state = "length";
        this.#remaining = contentLength;
        return;
      case "chunked":
        this.#state = "chunked";
        this.#chunked = new ChunkedDecoder(this.#options.maxChunkLineBytes, this.#limits);
        return;
      case "close":
        this.#state = "close";
        return;
    }
  }

  #readChunked(input: Uint8Array, at: number, events: H1Event[]): number {
    const step = this.#chunked!.step(input, at);
    switch (step.type) {
      case "data":
        if (step.data.length > 0) events.push({ type: "data", data: step.data });
        return step.next;
      case "more":
        return input.length;
      case "error":
        return this.#fail("protocol", step.reason, events, input);
      case "done": {
        const { fields, next } = step.trailers;
        const why = trailerSectionError(fields);
        if (why !== null) return this.#fail("invalid_response", `trailers: ${why}`, events, input);
        if (fields.length > 0) events.push({ type: "trailers", fields });
        this.#end(events);
        return next;
      }
    }
  }

  #end(events: H1Event[]): void {
    this.#state = "done";
    this.#outcome = "end";
    this.#reusable = this.#keepAlive;
    events.push({ type: "end", keepAlive: this.#keepAlive });
  }

  #noteExcess(length: number, events: H1Event[]): void {
    this.#excess += length;
    events.push({ type: "excess", length });
  }

  /** Fails the response; the rest of `input`, if given, is not looked at. */
  #fail(kind: H1ErrorKind, reason: string, events: H1Event[], input?: Uint8Array): number {
    this.#state = "done";
    this.#outcome = "error";
    this.#reusable = false;
    events.push({ type: "error", kind, reason });
    return input?.length ?? 0;
  }
}
