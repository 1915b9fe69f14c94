/**
 * An in-memory KV Connect server for tests: what `Deno.openKv("http://…")`
 * talks to, without Docker or a network. Written from the protocol
 * description (`proto/kv-connect.md` and `proto/schema/datapath.proto` of
 * denoland/denokv), answering like the real `denokv` server does (as read
 * in its Rust source: statuses, limits, sum/min/max and check semantics).
 *
 * Supported:
 * - metadata exchange (`POST /` with `Authorization: Bearer <token>` and
 *   `{"supportedVersions": [...]}`): protocol version 3 or 2, one "strong"
 *   endpoint (`/v2`), a data path token of its own and an expiry a day out;
 * - `/v2/snapshot_read`: raw byte keys in lexicographic order, ranges with
 *   start (inclusive), end (exclusive), limit and reverse;
 * - `/v2/atomic_write`: versionstamp checks (an empty versionstamp means
 *   "absent"; every failed check is reported, nothing is written), SET,
 *   DELETE, SUM / MIN / MAX on LE64 (`Deno.KvU64`) values (SUM wraps around
 *   2^64), SET_SUFFIX_VERSIONSTAMPED_KEY, and `expire_at_ms` (an expired key
 *   reads as absent). Every commit gets a 10-byte versionstamp: a counter
 *   bumped by one per commit, 8 bytes big-endian, then 2 zero bytes;
 * - the limits of the real server (10 ranges / 1000 entries per read, 10
 *   checks and 1000 mutations per write, 2 KiB keys, 64 KiB values, 800 KiB
 *   per write), each answered 400 like there.
 *
 * Not supported, answered 400 (never 5xx, which the client would retry
 * forever): queues (`enqueues` in an atomic write; Deno's client never sends
 * them), `/v2/watch`, V8-encoded SUM operands (bigint / number sums with
 * min/max/clamp), protocol version 1.
 *
 * Every malformed request (bad JSON or protobuf, wrong headers, bad limits,
 * wrong types) gets a 4xx with a plain-text reason. An unexpected exception
 * in the handler is answered 400 too (so a client fails fast instead of
 * retrying) and kept in {@link KvConnectServer.internalErrors}.
 *
 * @example
 * ```ts
 * const server = startKvConnectServer({ token: "secret" });
 * Deno.env.set("DENO_KV_ACCESS_TOKEN", "secret");
 * const kv = await Deno.openKv(server.url);
 * await kv.set(["a"], 1);
 * kv.close();
 * await server.close();
 * ```
 *
 * @module
 */

import { readUpTo } from "../../shared/bytes.ts";
import { type Entry, MemoryKv } from "./_kv_connect_store.ts";
import {
  AW_CHECK_FAILURE,
  AW_SUCCESS,
  DATA_PATH,
  HttpError,
  MAX_BODY_BYTES,
  parseAtomicWrite,
  parseSnapshotRead,
  ProtoError,
  ProtoWriter,
  SR_SUCCESS,
  VERSIONS,
} from "./_kv_connect_wire.ts";

function encodeEntry(e: Entry): ProtoWriter {
  return new ProtoWriter().bytes(1, e.key).bytes(2, e.value).uint(3, e.encoding)
    .bytes(4, e.versionstamp);
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

async function readBody(req: Request): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array(0);
  let body: Uint8Array | null;
  try {
    body = await readUpTo(req.body, MAX_BODY_BYTES);
  } catch (err) {
    throw new HttpError(400, `Could not read the request body: ${err}`); // e.g. the client went away
  }
  if (body === null) throw new HttpError(413, "Request body too large");
  return body;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
function bearerToken(req: Request): string | undefined {
  const m = /^(\S+) (.*)$/.exec(req.headers.get("authorization") ?? "");
  return m && m[1].toLowerCase() === "bearer" ? m[2] : undefined;
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain" } });
}

function protobuf(w: ProtoWriter): Response {
  return new Response(w.finish(), { headers: { "content-type": "application/x-protobuf" } });
}

/** Options of {@link startKvConnectServer}. */
export interface KvConnectServerOptions {
  /** The access token clients must present (`DENO_KV_ACCESS_TOKEN`). */
  token: string;
  /** Clock for expiry, in milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
}

/** Requests served, by kind. */
export interface KvConnectStats {
  /** Successful metadata exchanges. */
  metadata: number;
  /** Successful snapshot reads. */
  snapshotReads: number;
  /** Atomic writes that committed. */
  commits: number;
  /** Atomic writes refused by a failed check. */
  checkFailures: number;
  /** Requests answered with a 4xx status. */
  rejected: number;
}

/** A running server. */
export interface KvConnectServer {
  /** Base URL for `Deno.openKv`, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** The port bound on 127.0.0.1. */
  port: number;
  /** The database id (a UUID) given out in the metadata exchange. */
  databaseId: string;
  /** Counters of the requests served so far. */
  stats: KvConnectStats;
  /** Unexpected exceptions of the handler (a bug of this server); empty in a healthy run. */
  internalErrors: unknown[];
  /** Number of live (unexpired) keys. */
  keyCount(): number;
  /** Stop serving (open connections are closed). */
  close(): Promise<void>;
  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start an in-memory KV Connect server on 127.0.0.1, on a free port. */
export function startKvConnectServer(options: KvConnectServerOptions): KvConnectServer {
  const kv = new MemoryKv(options.now ?? Date.now);
  const databaseId = crypto.randomUUID();
  // The data path token differs from the access token: a client must use the
  // one the metadata exchange gave it.
  const dataToken = `data-${crypto.randomUUID()}`;
  const stats: KvConnectStats = {
    metadata: 0,
    snapshotReads: 0,
    commits: 0,
    checkFailures: 0,
    rejected: 0,
  };
  const internalErrors: unknown[] = [];

  async function metadataExchange(req: Request): Promise<Response> {
    if (bearerToken(req) !== options.token) throw new HttpError(401, "Invalid access token.");
    const raw = new TextDecoder().decode(await readBody(req));
    if (raw.trim() === "") {
      // no body: the client only knows version 1
      throw new HttpError(400, "The server requires protocol version 2 or newer.");
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new HttpError(400, "The metadata exchange request is not JSON.");
    }
    const versions = (parsed as { supportedVersions?: unknown } | null)?.supportedVersions;
    if (
      typeof parsed !== "object" || parsed === null || Array.isArray(parsed) ||
      Object.keys(parsed).length !== 1 || !Array.isArray(versions) ||
      !versions.every((v) => Number.isInteger(v))
    ) {
      throw new HttpError(400, 'Expected {"supportedVersions": [numbers]}.');
    }
    const version = VERSIONS.find((v) => versions.includes(v));
    if (version === undefined) {
      throw new HttpError(400, "No common protocol version; the server speaks 2 and 3.");
    }
    stats.metadata++;
    return Response.json({
      version,
      databaseId,
      endpoints: [{ url: DATA_PATH, consistency: "strong" }],
      token: dataToken,
      expiresAt: new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString(),
    });
  }

  function checkDataPathHeaders(req: Request): void {
    const version = req.headers.get("x-denokv-version");
    if (version !== "2" && version !== "3") {
      throw new HttpError(400, "Expected protocol version 2 or 3 (x-denokv-version).");
    }
    if (bearerToken(req) !== dataToken) throw new HttpError(401, "Invalid access token.");
    if (req.headers.get("x-denokv-database-id") !== databaseId) {
      throw new HttpError(400, "Invalid database id.");
    }
  }

  async function snapshotRead(req: Request): Promise<Response> {
    const ranges = parseSnapshotRead(await readBody(req));
    const results = kv.read(ranges);
    stats.snapshotReads++;
    const out = new ProtoWriter();
    for (const entries of results) {
      const range = new ProtoWriter();
      for (const e of entries) range.message(1, encodeEntry(e));
      out.message(1, range);
    }
    return protobuf(out.bool(4, true).uint(8, SR_SUCCESS));
  }

  async function atomicWrite(req: Request): Promise<Response> {
    const result = kv.write(parseAtomicWrite(await readBody(req)));
    if ("failed" in result) {
      stats.checkFailures++;
      return protobuf(new ProtoWriter().uint(1, AW_CHECK_FAILURE).packed(4, result.failed));
    }
    stats.commits++;
    return protobuf(new ProtoWriter().uint(1, AW_SUCCESS).bytes(2, result.versionstamp));
  }

  async function route(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const endpoints: Record<string, (req: Request) => Promise<Response>> = {
      "/": metadataExchange,
      [`${DATA_PATH}/snapshot_read`]: snapshotRead,
      [`${DATA_PATH}/atomic_write`]: atomicWrite,
      [`${DATA_PATH}/watch`]: () => {
        throw new HttpError(400, "Watch is not supported by this test server.");
      },
    };
    const handler = endpoints[path];
    if (!handler) throw new HttpError(404, "Resource not found.");
    if (req.method !== "POST") throw new HttpError(405, "Use POST.");
    if (path !== "/") checkDataPathHeaders(req);
    return await handler(req);
  }

  async function handle(req: Request): Promise<Response> {
    try {
      return await route(req);
    } catch (err) {
      let res: Response;
      if (err instanceof HttpError) res = text(err.status, err.message);
      else if (err instanceof ProtoError) {
        res = text(400, `Request protobuf is invalid: ${err.message}.`);
      } else {
        internalErrors.push(err);
        res = text(400, `Internal error of the test KV Connect server: ${err}`);
      }
      stats.rejected++;
      return res;
    }
  }

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handle);
  const port = server.addr.port;
  let closed: Promise<void> | undefined;
  const close = () => closed ??= server.shutdown();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    databaseId,
    stats,
    internalErrors,
    keyCount: () => kv.size,
    close,
    [Symbol.asyncDispose]: close,
  };
}
