/**
 * The wire side of the test KV Connect server (`kv_connect_server.ts`): a
 * minimal proto3 reader and writer, the `com.deno.kv.datapath` messages the
 * server reads, their enums, the real server's limits, and the request checks
 * that mirror denokv's. Problems are thrown as {@link HttpError} or
 * {@link ProtoError}; the server answers them with a 4xx.
 *
 * @module
 */

// ---------------------------------------------------------------------------
// Minimal protobuf (proto3 wire format)
// ---------------------------------------------------------------------------

/** A request body that is not a valid protobuf message of the expected type. */
export class ProtoError extends Error {}

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
export class ProtoWriter {
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

/** A decoded `ReadRange`. */
export interface ReadRange {
  start: Uint8Array;
  end: Uint8Array;
  limit: number;
  reverse: boolean;
}
/** A decoded `Check`. */
export interface Check {
  key: Uint8Array;
  versionstamp: Uint8Array;
}
/** A decoded `Mutation`. */
export interface Mutation {
  key: Uint8Array;
  value: { data: Uint8Array; encoding: number } | undefined;
  mutationType: number;
  expireAtMs: bigint;
  sumMin: Uint8Array;
  sumMax: Uint8Array;
  sumClamp: boolean;
}
/** A decoded `AtomicWrite`. */
export interface AtomicWrite {
  checks: Check[];
  mutations: Mutation[];
  enqueues: Uint8Array[];
}

/** `ValueEncoding`. */
export const VE_V8 = 1;
export const VE_LE64 = 2;
export const VE_BYTES = 3;
/** `MutationType`. */
export const M_SET = 1;
export const M_DELETE = 2;
export const M_SUM = 3;
export const M_MAX = 4;
export const M_MIN = 5;
export const M_SET_SUFFIX_VERSIONSTAMPED_KEY = 9;
/** `AtomicWriteStatus`. */
export const AW_SUCCESS = 1;
export const AW_CHECK_FAILURE = 2;
/** `SnapshotReadStatus`. */
export const SR_SUCCESS = 1;

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
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Path of the one data path endpoint. */
export const DATA_PATH = "/v2";
/** Protocol versions this server speaks, best first. */
export const VERSIONS = [3, 2];

/** An error answered with its status and message as plain text. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

// ---------------------------------------------------------------------------
// Request validation (mirrors the checks of the real server)
// ---------------------------------------------------------------------------

/** Decodes a `SnapshotRead` and checks it against the limits. */
export function parseSnapshotRead(body: Uint8Array): ReadRange[] {
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

/** Decodes an `AtomicWrite` and checks it against the limits (queues refused). */
export function parseAtomicWrite(body: Uint8Array): AtomicWrite {
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
