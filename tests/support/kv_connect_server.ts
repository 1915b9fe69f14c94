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

// ---------------------------------------------------------------------------
// Minimal protobuf (proto3 wire format)
// ---------------------------------------------------------------------------

/** A request body that is not a valid protobuf message of the expected type. */
class ProtoError extends Error {}

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

/** Scalar field types used by the data path schema, or a nested message. */
type FieldType = "bytes" | "bool" | "int32" | "int64" | "uint32" | "enum" | Schema;
interface FieldSpec {
  name: string;
  type: FieldType;
  repeated?: boolean;
}
/** Field number → field. Unknown fields are skipped, as proto3 requires. */
type Schema = { readonly [field: number]: FieldSpec };

class ProtoReader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** A base-128 varint, as an unsigned 64-bit value. */
  varint(): bigint {
    let value = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new ProtoError("truncated varint");
      const byte = this.buf[this.pos++];
      value |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return BigInt.asUintN(64, value);
    }
    throw new ProtoError("varint longer than 10 bytes");
  }

  take(n: number): Uint8Array {
    if (n > this.buf.length - this.pos) throw new ProtoError("truncated field");
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  lengthDelimited(): Uint8Array {
    const len = this.varint();
    if (len > BigInt(this.buf.length - this.pos)) throw new ProtoError("truncated field");
    return this.take(Number(len));
  }

  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_I64) this.take(8);
    else if (wire === WIRE_LEN) this.lengthDelimited();
    else if (wire === WIRE_I32) this.take(4);
    else throw new ProtoError(`unsupported wire type ${wire}`);
  }
}

function defaultOf(spec: FieldSpec): unknown {
  if (spec.repeated) return [];
  switch (spec.type) {
    case "bytes":
      return new Uint8Array(0);
    case "bool":
      return false;
    case "int64":
      return 0n;
    case "int32":
    case "uint32":
    case "enum":
      return 0;
    default:
      return undefined; // an absent message field
  }
}

function scalarOfVarint(type: FieldType, v: bigint): unknown {
  switch (type) {
    case "bool":
      return v !== 0n;
    case "int64":
      return BigInt.asIntN(64, v);
    case "uint32":
      return Number(BigInt.asUintN(32, v));
    case "int32":
    case "enum":
      return Number(BigInt.asIntN(32, v));
    default:
      throw new ProtoError(
        `a varint where ${typeof type === "string" ? type : "a message"} belongs`,
      );
  }
}

/** Decode one message; throws {@link ProtoError} when `buf` is not one. */
function decodeMessage(buf: Uint8Array, schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const spec of Object.values(schema)) out[spec.name] = defaultOf(spec);
  const r = new ProtoReader(buf);
  while (!r.done) {
    const tag = r.varint();
    const field = tag >> 3n;
    const wire = Number(tag & 7n);
    if (field === 0n || field > 0x1fffffffn) throw new ProtoError("invalid field number");
    const spec = schema[Number(field)];
    if (!spec) {
      r.skip(wire);
      continue;
    }
    const values: unknown[] = [];
    if (typeof spec.type === "object" || spec.type === "bytes") {
      if (wire !== WIRE_LEN) throw new ProtoError(`field ${spec.name}: wrong wire type ${wire}`);
      const bytes = r.lengthDelimited();
      values.push(typeof spec.type === "object" ? decodeMessage(bytes, spec.type) : bytes.slice());
    } else if (wire === WIRE_VARINT) {
      values.push(scalarOfVarint(spec.type, r.varint()));
    } else if (wire === WIRE_LEN && spec.repeated) {
      // a packed repeated scalar
      const packed = new ProtoReader(r.lengthDelimited());
      while (!packed.done) values.push(scalarOfVarint(spec.type, packed.varint()));
    } else {
      throw new ProtoError(`field ${spec.name}: wrong wire type ${wire}`);
    }
    if (spec.repeated) (out[spec.name] as unknown[]).push(...values);
    else out[spec.name] = values[0];
  }
  return out;
}

/** Builds one message; default values (0, false, empty) are left out, as proto3 does. */
class ProtoWriter {
  readonly #bytes: number[] = [];

  #varint(v: bigint): void {
    let x = BigInt.asUintN(64, v);
    while (x >= 0x80n) {
      this.#bytes.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    this.#bytes.push(Number(x));
  }

  #tag(field: number, wire: number): void {
    this.#varint(BigInt((field << 3) | wire));
  }

  uint(field: number, v: number): this {
    if (v !== 0) {
      this.#tag(field, WIRE_VARINT);
      this.#varint(BigInt(v));
    }
    return this;
  }

  bool(field: number, v: boolean): this {
    return this.uint(field, v ? 1 : 0);
  }

  bytes(field: number, v: Uint8Array): this {
    if (v.length > 0) this.#lengthDelimited(field, v);
    return this;
  }

  /** An embedded message; written even when empty (an element of a repeated field counts). */
  message(field: number, m: ProtoWriter): this {
    this.#lengthDelimited(field, m.finish());
    return this;
  }

  /** A packed repeated uint32. */
  packed(field: number, vs: readonly number[]): this {
    if (vs.length > 0) {
      const inner = new ProtoWriter();
      for (const v of vs) inner.#varint(BigInt(v));
      this.#lengthDelimited(field, inner.finish());
    }
    return this;
  }

  #lengthDelimited(field: number, v: Uint8Array): void {
    this.#tag(field, WIRE_LEN);
    this.#varint(BigInt(v.length));
    for (const b of v) this.#bytes.push(b);
  }

  finish(): Uint8Array<ArrayBuffer> {
    return Uint8Array.from(this.#bytes);
  }
}

// com.deno.kv.datapath request messages (only the fields the server reads).

const READ_RANGE: Schema = {
  1: { name: "start", type: "bytes" },
  2: { name: "end", type: "bytes" },
  3: { name: "limit", type: "int32" },
  4: { name: "reverse", type: "bool" },
};
const SNAPSHOT_READ: Schema = { 1: { name: "ranges", type: READ_RANGE, repeated: true } };
const CHECK: Schema = {
  1: { name: "key", type: "bytes" },
  2: { name: "versionstamp", type: "bytes" },
};
const KV_VALUE: Schema = {
  1: { name: "data", type: "bytes" },
  2: { name: "encoding", type: "enum" },
};
const MUTATION: Schema = {
  1: { name: "key", type: "bytes" },
  2: { name: "value", type: KV_VALUE },
  3: { name: "mutationType", type: "enum" },
  4: { name: "expireAtMs", type: "int64" },
  5: { name: "sumMin", type: "bytes" },
  6: { name: "sumMax", type: "bytes" },
  7: { name: "sumClamp", type: "bool" },
};
const ATOMIC_WRITE: Schema = {
  1: { name: "checks", type: CHECK, repeated: true },
  2: { name: "mutations", type: MUTATION, repeated: true },
  // Enqueue messages are only counted (queues are not supported).
  3: { name: "enqueues", type: "bytes", repeated: true },
};

interface ReadRange {
  start: Uint8Array;
  end: Uint8Array;
  limit: number;
  reverse: boolean;
}
interface Check {
  key: Uint8Array;
  versionstamp: Uint8Array;
}
interface Mutation {
  key: Uint8Array;
  value: { data: Uint8Array; encoding: number } | undefined;
  mutationType: number;
  expireAtMs: bigint;
  sumMin: Uint8Array;
  sumMax: Uint8Array;
  sumClamp: boolean;
}
interface AtomicWrite {
  checks: Check[];
  mutations: Mutation[];
  enqueues: Uint8Array[];
}

/** `ValueEncoding`. */
const VE_V8 = 1;
const VE_LE64 = 2;
const VE_BYTES = 3;
/** `MutationType`. */
const M_SET = 1;
const M_DELETE = 2;
const M_SUM = 3;
const M_MAX = 4;
const M_MIN = 5;
const M_SET_SUFFIX_VERSIONSTAMPED_KEY = 9;
/** `AtomicWriteStatus`. */
const AW_SUCCESS = 1;
const AW_CHECK_FAILURE = 2;
/** `SnapshotReadStatus`. */
const SR_SUCCESS = 1;

// Limits of the real server (denokv `proto/limits.rs`).
const MAX_WRITE_KEY_BYTES = 2048;
const MAX_READ_KEY_BYTES = MAX_WRITE_KEY_BYTES + 1;
const MAX_VALUE_BYTES = 65536;
const MAX_READ_RANGES = 10;
const MAX_READ_ENTRIES = 1000;
const MAX_CHECKS = 10;
const MAX_MUTATIONS = 1000;
const MAX_TOTAL_MUTATION_BYTES = 819200;
/** Largest request body read at all. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Path of the one data path endpoint. */
const DATA_PATH = "/v2";
/** Protocol versions this server speaks, best first. */
const VERSIONS = [3, 2];

// ---------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------

interface Entry {
  key: Uint8Array;
  value: Uint8Array;
  encoding: number;
  versionstamp: Uint8Array;
  /** Milliseconds since the epoch; 0 = never. */
  expireAtMs: number;
}

/**
 * A key as a string of one char per byte: JavaScript compares such strings
 * by char code, which is exactly the byte-wise lexicographic order of keys.
 */
function byteString(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return s;
}

function le64(v: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
  return out;
}

function readLe64(bytes: Uint8Array, what: string): bigint {
  if (bytes.length !== 8) throw new HttpError(400, `${what} is not an 8-byte LE64 value`);
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
}

/** An error answered with its status and message as plain text. */
class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Sorted in-memory key space with versionstamped entries. */
class MemoryKv {
  readonly #entries = new Map<string, Entry>();
  /** All keys, sorted. */
  #keys: string[] = [];
  #version = 0n;

  constructor(readonly now: () => number) {}

  /** Number of live keys. */
  get size(): number {
    this.#expire();
    return this.#entries.size;
  }

  /** Index of the first key >= `k`. */
  #lowerBound(k: string): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#keys[mid] < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #put(k: string, e: Entry | null): void {
    const had = this.#entries.has(k);
    if (e) {
      this.#entries.set(k, e);
      if (!had) this.#keys.splice(this.#lowerBound(k), 0, k);
    } else if (had) {
      this.#entries.delete(k);
      this.#keys.splice(this.#lowerBound(k), 1);
    }
  }

  /** Drop every expired entry. */
  #expire(): void {
    const now = this.now();
    for (const [k, e] of this.#entries) {
      if (e.expireAtMs !== 0 && e.expireAtMs <= now) this.#put(k, null);
    }
  }

  read(ranges: ReadRange[]): Entry[][] {
    this.#expire();
    return ranges.map((r) => {
      const start = byteString(r.start);
      const end = byteString(r.end);
      const out: Entry[] = [];
      if (r.reverse) {
        for (let i = this.#lowerBound(end) - 1; i >= 0 && out.length < r.limit; i--) {
          if (this.#keys[i] < start) break;
          out.push(this.#entries.get(this.#keys[i])!);
        }
      } else {
        for (let i = this.#lowerBound(start); i < this.#keys.length && out.length < r.limit; i++) {
          if (this.#keys[i] >= end) break;
          out.push(this.#entries.get(this.#keys[i])!);
        }
      }
      return out;
    });
  }

  /**
   * Apply a validated write: all checks, then all mutations, or nothing.
   * Returns the indexes of the failed checks, or the new versionstamp.
   * Throws {@link HttpError} (writing nothing) when a mutation cannot apply.
   */
  write(w: AtomicWrite): { failed: number[] } | { versionstamp: Uint8Array } {
    this.#expire();
    const failed: number[] = [];
    w.checks.forEach((c, i) => {
      const cur = this.#entries.get(byteString(c.key));
      const ok = cur ? sameBytes(cur.versionstamp, c.versionstamp) : c.versionstamp.length === 0;
      if (!ok) failed.push(i);
    });
    if (failed.length > 0) return { failed };

    const versionstamp = new Uint8Array(10);
    new DataView(versionstamp.buffer).setBigUint64(0, this.#version + 1n, false);
    // Mutations go to a staging map first, so that a failing one writes nothing.
    const staged = new Map<string, Entry | null>();
    const current = (k: string) => staged.has(k) ? staged.get(k) : this.#entries.get(k);
    for (const m of w.mutations) {
      let key = m.key;
      if (m.mutationType === M_SET_SUFFIX_VERSIONSTAMPED_KEY) {
        // the versionstamp appended as a string key part: 0x02, 20 hex digits, 0x00
        const hex = [...versionstamp].map((b) => b.toString(16).padStart(2, "0")).join("");
        key = new Uint8Array([...m.key, 0x02, ...new TextEncoder().encode(hex), 0x00]);
      }
      const k = byteString(key);
      const expireAtMs = m.expireAtMs > 0n ? Number(m.expireAtMs) : 0;
      const entry = (value: Uint8Array, encoding: number, expiry: number): Entry => ({
        key,
        value,
        encoding,
        versionstamp,
        expireAtMs: expiry,
      });
      switch (m.mutationType) {
        case M_SET:
        case M_SET_SUFFIX_VERSIONSTAMPED_KEY:
          staged.set(k, entry(m.value!.data, m.value!.encoding, expireAtMs));
          break;
        case M_DELETE:
          staged.set(k, null);
          break;
        case M_SUM:
        case M_MIN:
        case M_MAX: {
          const op = m.mutationType === M_SUM ? "sum" : m.mutationType === M_MIN ? "min" : "max";
          if (m.value!.encoding !== VE_LE64) {
            throw new HttpError(400, `'${op}' of a non-LE64 operand is not supported`);
          }
          const operand = readLe64(m.value!.data, `the '${op}' operand`);
          const old = current(k);
          let result = operand;
          if (old) {
            if (old.encoding !== VE_LE64) {
              throw new HttpError(
                400,
                `Failed to perform '${op}' mutation on a non-U64 value in the database`,
              );
            }
            const a = readLe64(old.value, "the stored value");
            result = op === "sum"
              ? BigInt.asUintN(64, a + operand)
              : op === "min"
              ? (a < operand ? a : operand)
              : (a > operand ? a : operand);
          }
          // Like the real server, a sum/min/max result never expires.
          staged.set(k, entry(le64(result), VE_LE64, 0));
          break;
        }
      }
    }
    this.#version++;
    for (const [k, e] of staged) this.#put(k, e);
    return { versionstamp };
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// ---------------------------------------------------------------------------
// Request validation (mirrors the checks of the real server)
// ---------------------------------------------------------------------------

function parseSnapshotRead(body: Uint8Array): ReadRange[] {
  const { ranges } = decodeMessage(body, SNAPSHOT_READ) as unknown as { ranges: ReadRange[] };
  if (ranges.length > MAX_READ_RANGES) throw new HttpError(400, "Too many read ranges");
  let total = 0;
  for (const r of ranges) {
    if (r.limit <= 0) throw new HttpError(400, "The read range limit is invalid");
    if (r.start.length > MAX_READ_KEY_BYTES || r.end.length > MAX_READ_KEY_BYTES) {
      throw new HttpError(400, "A key exceeds the key size limit");
    }
    total += r.limit;
  }
  if (total > MAX_READ_ENTRIES) throw new HttpError(400, "Too many entries requested");
  return ranges;
}

function parseAtomicWrite(body: Uint8Array): AtomicWrite {
  const w = decodeMessage(body, ATOMIC_WRITE) as unknown as AtomicWrite;
  if (w.enqueues.length > 0) {
    throw new HttpError(400, "Queues (enqueue) are not supported by this test server");
  }
  if (w.checks.length > MAX_CHECKS) throw new HttpError(400, "Too many checks");
  if (w.mutations.length > MAX_MUTATIONS) throw new HttpError(400, "Too many mutations");
  let size = 0;
  for (const c of w.checks) {
    if (c.key.length > MAX_READ_KEY_BYTES) throw new HttpError(400, "A key is too long");
    if (c.versionstamp.length !== 0 && c.versionstamp.length !== 10) {
      throw new HttpError(400, "Invalid versionstamp");
    }
    size += c.key.length;
  }
  for (const m of w.mutations) {
    if (m.key.length > MAX_WRITE_KEY_BYTES) throw new HttpError(400, "A key is too long");
    const valueSize = m.value?.data.length ?? 0;
    if (valueSize > MAX_VALUE_BYTES) throw new HttpError(400, "A value is too large");
    size += m.key.length + valueSize;
    if (m.mutationType !== M_DELETE) {
      if (
        ![M_SET, M_SUM, M_MIN, M_MAX, M_SET_SUFFIX_VERSIONSTAMPED_KEY].includes(m.mutationType) ||
        !m.value
      ) {
        throw new HttpError(400, "Invalid mutation kind or arguments");
      }
      if (![VE_V8, VE_LE64, VE_BYTES].includes(m.value.encoding)) {
        throw new HttpError(400, `Unknown value encoding ${m.value.encoding}`);
      }
      if (m.value.encoding === VE_LE64 && m.value.data.length !== 8) {
        throw new HttpError(400, "An LE64 value is not 8 bytes");
      }
    }
    if (m.expireAtMs < -1n) throw new HttpError(400, "Invalid mutation expire at");
  }
  if (size > MAX_TOTAL_MUTATION_BYTES) throw new HttpError(400, "The atomic write is too large");
  return w;
}

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
