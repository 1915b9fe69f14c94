/**
 * A small HTTP/3 client on `Deno.connectQuic` built from the project's codec:
 * a library for tests that need control over the bytes (QPACK dynamic-table
 * references, blocked streams, malformed frames), and a command line for
 * requests with headers (gtlsclient cannot send any):
 *
 *     deno run -A examples/h3_client.ts [-X METHOD] [-H "name: value"]... [-d BODY] \
 *       [--ca .dev/certs/ca.pem] https://localhost:9889/path
 *
 * `-h` prints the usage. Failures (proxy down, bad CA file, timeout) are one
 * line on stderr, `h3_client: ...`, with exit code 1; usage errors exit 2.
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
import { type H3Tunnel, openTunnel, type TunnelRequest } from "./h3_tunnel.ts";

export type { H3Tunnel, TunnelRequest } from "./h3_tunnel.ts";

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
  /** The types of the unidirectional streams the server opened, in the order they arrived. */
  readonly serverStreamTypes: number[] = [];
  /** GOAWAY ids received. */
  readonly goaways: number[] = [];
  #settings = Promise.withResolvers<Settings>();
  #uniReaders: Promise<void>;

  private constructor(conn: Deno.QuicConn) {
    this.conn = conn;
    this.serverSettings = this.#settings.promise;
    this.#uniReaders = this.#readUni();
  }

  /**
   * Connects and sets up control + QPACK encoder streams. `maxIdleTimeoutMs`
   * also bounds the handshake: a server that never answers fails the
   * connection after about that long (Deno's default is 30 s). `endpoint`
   * is the local QUIC endpoint to connect from; without one Deno binds a new
   * one per connection, whose native state lingers until V8 collects it (a
   * caller opening thousands of connections should share one).
   */
  static async connect(
    port: number,
    caPem: string,
    hostname = "127.0.0.1",
    serverName = "localhost",
    maxIdleTimeoutMs?: number,
    endpoint?: Deno.QuicEndpoint,
  ): Promise<H3TestClient> {
    const conn = await Deno.connectQuic({
      hostname,
      port,
      serverName,
      caCerts: [caPem],
      alpnProtocols: ["h3"],
      ...(maxIdleTimeoutMs === undefined ? {} : { maxIdleTimeout: maxIdleTimeoutMs }),
      ...(endpoint === undefined ? {} : { endpoint }),
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
          this.serverStreamTypes.push(type);
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
    /** A trailer section sent after the body (RFC 9114 §4.1). */
    trailers?: Array<[string, string]>;
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
      if (opts.trailers) {
        parts.push(encodeFrame(FrameType.HEADERS, this.encodeFields(opts.trailers)));
      }
    }
    // Send while reading: a server may answer (and stop reading) before the
    // body is all sent, e.g. 413 or 503.
    const sending = (async () => {
      await writer.write(concatBytes(...parts));
      if (opts.finDelayMs) await new Promise((r) => setTimeout(r, opts.finDelayMs));
      await writer.close();
    })().catch(() => {});
    const response = await this.#readResponse(stream.readable);
    // A body the server stopped reading may never finish sending: not waited for.
    void sending;
    return response;
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
          else if (ev.kind === "frame" && ev.type === FrameType.HEADERS) {
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

  /**
   * Opens an extended CONNECT tunnel (RFC 9220) on a new request stream and
   * resolves with the answer once its head has arrived (a 2xx: the tunnel
   * is open). Throws before sending anything when the server's SETTINGS do
   * not enable extended CONNECT (RFC 9220 §3: a client must not send one).
   */
  async connectTunnel(req: TunnelRequest): Promise<H3Tunnel> {
    const settings = await this.serverSettings;
    if (settings.get(SettingId.ENABLE_CONNECT_PROTOCOL) !== 1) {
      throw new Error(
        "the server does not accept extended CONNECT (no SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 9220 §3)",
      );
    }
    const stream = await this.conn.createBidirectionalStream();
    return await openTunnel(
      stream,
      req,
      (fields) => this.encodeFields(fields),
      (payload) => this.#decoder.decodeSection(0, payload) as Array<[string, string]>,
    );
  }

  /**
   * Opens a WebSocket over HTTP/3 (RFC 9220: an extended CONNECT with
   * `:protocol websocket` and `sec-websocket-version: 13`); the tunnel then
   * carries RFC 6455 frames, which the caller writes and reads.
   */
  connectWebSocket(
    req: Omit<TunnelRequest, "protocol">,
  ): Promise<H3Tunnel> {
    return this.connectTunnel({
      ...req,
      protocol: "websocket",
      headers: [["sec-websocket-version", "13"], ...(req.headers ?? [])],
    });
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

/** Usage of the command line. */
export const USAGE = `HTTP/3 client (the project's own codec on Deno.connectQuic)

Usage: deno run -A examples/h3_client.ts [options] URL

Options:
  -X, --request METHOD     request method (default GET)
  -H, --header 'N: V'      add a request header (repeatable)
  -d, --data BODY          request body (sends content-length)
  -i, --include            print the status line and response headers
      --ca FILE            CA certificate to trust (default .dev/certs/ca.pem)
      --connect IP         address to connect to (default 127.0.0.1); the URL's
                           host is the TLS server name and :authority
      --connect-timeout S  give up connecting after S seconds (default 5)
      --max-time S         give up on the whole request after S seconds (default 60)
  -h, --help               print this help and exit

Exit code: 0 for a 2xx or 3xx answer, 1 for any other answer or a failure
(one line on stderr), 2 for a usage error.
`;

/** A failure of the command line: printed as one line, `h3_client: <message>`. */
class CliError extends Error {
  constructor(message: string, readonly code = 1) {
    super(message);
  }
}

/** Rejects with `error` after `seconds`, unless `p` settles first. */
async function within<T>(p: Promise<T>, seconds: number, error: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(error()), seconds * 1000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function seconds(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) {
    throw new CliError(`${name} must be a number of seconds > 0`, 2);
  }
  return n;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n", 1)[0];
}

async function request(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        request: { type: "string", short: "X", default: "GET" },
        header: { type: "string", short: "H", multiple: true },
        data: { type: "string", short: "d" },
        ca: { type: "string", default: ".dev/certs/ca.pem" },
        connect: { type: "string", default: "127.0.0.1" },
        include: { type: "boolean", short: "i", default: false },
        "connect-timeout": { type: "string" },
        "max-time": { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError(`${firstLine(err)} (-h for help)`, 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new CliError("exactly one URL is needed (-h for help)", 2);
  let url: URL;
  try {
    url = new URL(positionals[0]);
  } catch {
    throw new CliError(`not a URL: ${positionals[0]}`, 2);
  }
  if (url.protocol !== "https:") {
    throw new CliError(`the URL must be https://, not ${url.protocol}//`, 2);
  }
  const head: Array<[string, string]> = [
    [":method", values.request!],
    [":scheme", "https"],
    [":authority", url.host],
    [":path", url.pathname + url.search],
  ];
  for (const h of values.header ?? []) {
    const i = h.indexOf(":");
    if (i <= 0) throw new CliError(`a header must be 'name: value', not '${h}'`, 2);
    head.push([h.slice(0, i).trim().toLowerCase(), h.slice(i + 1).trim()]);
  }
  const connectTimeout = seconds(values["connect-timeout"], "--connect-timeout", 5);
  const maxTime = seconds(values["max-time"], "--max-time", 60);
  let ca: string;
  try {
    ca = await Deno.readTextFile(values.ca!);
  } catch (err) {
    throw new CliError(`cannot read the CA file ${values.ca}: ${firstLine(err)} (see --ca)`);
  }
  const port = Number(url.port || 443);
  const where = `${values.connect}:${port}`;
  let client: H3TestClient;
  try {
    client = await within(
      H3TestClient.connect(port, ca, values.connect, url.hostname, connectTimeout * 1000),
      connectTimeout,
      () => new Error(`no answer within ${connectTimeout} s`),
    );
  } catch (err) {
    throw new CliError(`cannot connect to ${where} over HTTP/3 (QUIC): ${firstLine(err)}`);
  }
  try {
    const body = values.data === undefined ? undefined : new TextEncoder().encode(values.data);
    if (body) head.push(["content-length", String(body.length)]);
    const res = await within(
      client.request({ head, body }),
      maxTime,
      () => new CliError(`no complete response from ${where} within ${maxTime} s (--max-time)`),
    );
    if (res.status === 0) throw new CliError(`${where} closed the stream without a response`);
    if (values.include) {
      console.log(`HTTP/3 ${res.status}`);
      for (const [n, v] of res.headers) console.log(`${n}: ${v}`);
      console.log();
    }
    await Deno.stdout.write(res.body);
    if (res.body.length > 0 && res.body.at(-1) !== 10) console.log();
    if (!res.finished) throw new CliError("the response ended abnormally (it may be incomplete)");
    return res.status >= 200 && res.status < 400 ? 0 : 1;
  } finally {
    // Do not wait for a peer that stopped answering.
    await within(client.close(), 1, () => new Error("close")).catch(() => {});
  }
}

/** Runs the command line; returns the exit code (never throws). */
export async function cli(args: string[]): Promise<number> {
  try {
    return await request(args);
  } catch (err) {
    const code = err instanceof CliError ? err.code : 1;
    console.error(`h3_client: ${firstLine(err)}`);
    return code;
  }
}

if (import.meta.main) Deno.exit(await cli(Deno.args));
