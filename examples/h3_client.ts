/**
 * A small HTTP/3 client on `Deno.connectQuic` built from the project's codec:
 * a library for tests that need control over the bytes (QPACK dynamic-table
 * references, blocked streams, malformed frames), and a command line for
 * requests with headers (gtlsclient cannot send any):
 *
 *     deno run -A examples/h3_client.ts [-X METHOD] [-H "name: value"]... [-d BODY] \
 *       [--ca .dev/certs/ca.pem] https://localhost:9889/path
 *
 * Interoperability is tested with gtlsclient and Chromium, not with this.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";

import {
  concatBytes,
  encodeFrame,
  encodeFrameHeader,
  encodeSettingsFrame,
  FrameDecoder,
  FrameType,
  NEED_MORE,
  QpackDecoder,
  QpackEncoder,
  SettingId,
  type Settings,
  StreamType,
} from "../proxy/h3/mod.ts";
import { decodeSettings } from "../proxy/h3/settings.ts";

/** A decoded response. */
export interface H3Response {
  status: number;
  headers: Array<[string, string]>;
  body: Uint8Array;
  /** A trailer section, if the server sent one. */
  trailers?: Array<[string, string]>;
  /** Whether the stream ended cleanly (FIN) rather than by a reset/error. */
  finished: boolean;
}

/** One HTTP/3 connection to the proxy. */
export class H3TestClient {
  readonly conn: Deno.QuicConn;
  readonly #encoder = new QpackEncoder();
  readonly #decoder = new QpackDecoder({ maxTableCapacity: 0, maxBlockedStreams: 0 });
  #control!: WritableStreamDefaultWriter<Uint8Array>;
  #qpackEncoder!: WritableStreamDefaultWriter<Uint8Array>;
  /** Server SETTINGS, once received. */
  readonly serverSettings: Promise<Settings>;
  /** Bytes the server wrote on its QPACK decoder stream (acks, increments). */
  readonly serverDecoderStream: Uint8Array[] = [];
  /** GOAWAY ids received. */
  readonly goaways: number[] = [];
  #settings = Promise.withResolvers<Settings>();
  #uniReaders: Promise<void>;

  private constructor(conn: Deno.QuicConn) {
    this.conn = conn;
    this.serverSettings = this.#settings.promise;
    this.#uniReaders = this.#readUni();
  }

  /** Connects and sets up control + QPACK encoder streams. */
  static async connect(
    port: number,
    caPem: string,
    hostname = "127.0.0.1",
    serverName = "localhost",
  ): Promise<H3TestClient> {
    const conn = await Deno.connectQuic({
      hostname,
      port,
      serverName,
      caCerts: [caPem],
      alpnProtocols: ["h3"],
    });
    const client = new H3TestClient(conn);
    client.#control = (await conn.createUnidirectionalStream()).getWriter();
    await client.#control.write(
      concatBytes(
        Uint8Array.of(StreamType.CONTROL),
        encodeSettingsFrame(new Map([[SettingId.QPACK_MAX_TABLE_CAPACITY, 0]])),
      ),
    );
    client.#qpackEncoder = (await conn.createUnidirectionalStream()).getWriter();
    await client.#qpackEncoder.write(Uint8Array.of(StreamType.QPACK_ENCODER));
    return client;
  }

  async #readUni(): Promise<void> {
    const reader = this.conn.incomingUnidirectionalStreams.getReader();
    const tasks: Promise<void>[] = [];
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        tasks.push(this.#readOneUni(value));
      }
    } catch {
      // closed
    }
    await Promise.allSettled(tasks);
  }

  async #readOneUni(stream: ReadableStream<Uint8Array>): Promise<void> {
    let type = -1;
    const frames = new FrameDecoder();
    try {
      for await (const chunk of stream) {
        let data = chunk;
        if (type === -1) {
          type = data[0];
          data = data.subarray(1);
        }
        if (type === StreamType.CONTROL) {
          frames.push(data);
          for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
            if (ev.kind !== "frame") continue;
            if (ev.type === FrameType.SETTINGS) this.#settings.resolve(decodeSettings(ev.payload));
            if (ev.type === FrameType.GOAWAY) this.goaways.push(ev.payload[0] & 0x3f);
          }
        } else if (type === StreamType.QPACK_DECODER && data.length > 0) {
          this.serverDecoderStream.push(data);
        }
      }
    } catch {
      // connection closed
    }
  }

  /** Writes raw bytes on our QPACK encoder stream. */
  async sendEncoderInstructions(bytes: Uint8Array): Promise<void> {
    await this.#qpackEncoder.write(bytes);
  }

  /** Writes raw bytes on our control stream (after SETTINGS). */
  async sendControl(bytes: Uint8Array): Promise<void> {
    await this.#control.write(bytes);
  }

  /** Encodes fields with the static table only. */
  encodeFields(fields: Array<[string, string]>): Uint8Array {
    return this.#encoder.encodeSection(fields);
  }

  /**
   * Sends a request: `head` is either fields (encoded here) or a ready field
   * section. `body` goes in DATA frames; `raw` is written as-is instead.
   */
  async request(opts: {
    head?: Array<[string, string]> | Uint8Array;
    body?: Uint8Array;
    raw?: Uint8Array;
    /** Delay before sending the FIN (ms). */
    finDelayMs?: number;
  }): Promise<H3Response> {
    const stream = await this.conn.createBidirectionalStream();
    const writer = stream.writable.getWriter();
    const parts: Uint8Array[] = [];
    if (opts.raw) parts.push(opts.raw);
    else {
      const block = opts.head instanceof Uint8Array
        ? opts.head
        : this.encodeFields(opts.head ?? []);
      parts.push(encodeFrame(FrameType.HEADERS, block));
      if (opts.body && opts.body.length > 0) {
        parts.push(encodeFrameHeader(FrameType.DATA, opts.body.length), opts.body);
      }
    }
    await writer.write(concatBytes(...parts));
    if (opts.finDelayMs) await new Promise((r) => setTimeout(r, opts.finDelayMs));
    await writer.close().catch(() => {});
    return await this.#readResponse(stream.readable);
  }

  async #readResponse(readable: ReadableStream<Uint8Array>): Promise<H3Response> {
    const frames = new FrameDecoder({ maxFrameSize: 1 << 20 });
    const body: Uint8Array[] = [];
    let status = 0;
    let headers: Array<[string, string]> = [];
    let trailers: Array<[string, string]> | undefined;
    let finished = true;
    try {
      for await (const chunk of readable) {
        frames.push(chunk);
        for (let ev = frames.next(); ev !== NEED_MORE; ev = frames.next()) {
          if (ev.kind === "data") body.push(ev.chunk.slice());
          else if (ev.type === FrameType.HEADERS) {
            const fields = this.#decoder.decodeSection(0, ev.payload) as Array<[string, string]>;
            if (status === 0) {
              status = Number(fields.find(([n]) => n === ":status")?.[1]);
              headers = fields.filter(([n]) => !n.startsWith(":"));
            } else trailers = fields;
          }
        }
      }
    } catch {
      finished = false;
    }
    return { status, headers, body: concatBytes(...body), trailers, finished };
  }

  /** Closes the connection and waits for background readers. */
  async close(): Promise<void> {
    try {
      this.conn.close({ closeCode: 0x100, reason: "" });
    } catch {
      // already closed
    }
    await this.#uniReaders;
  }
}

async function cli(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      request: { type: "string", short: "X", default: "GET" },
      header: { type: "string", short: "H", multiple: true },
      data: { type: "string", short: "d" },
      ca: { type: "string", default: ".dev/certs/ca.pem" },
      connect: { type: "string", default: "127.0.0.1" },
      include: { type: "boolean", short: "i", default: false },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1) {
    console.error(
      "usage: h3_client.ts [-X METHOD] [-H 'name: value']... [-d BODY] [-i] [--ca FILE] [--connect IP] URL",
    );
    return 2;
  }
  const url = new URL(positionals[0]);
  const port = Number(url.port || 443);
  const client = await H3TestClient.connect(
    port,
    await Deno.readTextFile(values.ca!),
    values.connect,
    url.hostname,
  );
  try {
    const head: Array<[string, string]> = [
      [":method", values.request!],
      [":scheme", "https"],
      [":authority", url.host],
      [":path", url.pathname + url.search],
    ];
    for (const h of values.header ?? []) {
      const i = h.indexOf(":");
      head.push([h.slice(0, i).trim().toLowerCase(), h.slice(i + 1).trim()]);
    }
    const body = values.data === undefined ? undefined : new TextEncoder().encode(values.data);
    if (body) head.push(["content-length", String(body.length)]);
    const res = await client.request({ head, body });
    if (values.include) {
      console.log(`HTTP/3 ${res.status}`);
      for (const [n, v] of res.headers) console.log(`${n}: ${v}`);
      console.log();
    }
    await Deno.stdout.write(res.body);
    if (res.body.length > 0 && res.body.at(-1) !== 10) console.log();
    return res.status >= 200 && res.status < 400 ? 0 : 1;
  } finally {
    await client.close();
  }
}

if (import.meta.main) Deno.exit(await cli(Deno.args));
