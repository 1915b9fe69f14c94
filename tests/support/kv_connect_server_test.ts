/**
 * The in-memory KV Connect server against Deno's real built-in KV Connect
 * client (`Deno.openKv("http://…")`). Where Deno KV semantics are at stake,
 * the same operations also run on a local `:memory:` store (the SQLite
 * backend, the reference) and the results are compared.
 */
import assert from "node:assert/strict";
import { type KvConnectServer, startKvConnectServer } from "./kv_connect_server.ts";
import { sleep } from "./wait.ts";

const TOKEN = "kv-connect-test-token";
const LIMIT_MS = 5_000;

/** Reject when `p` takes longer than `ms`. */
async function bounded<T>(p: Promise<T>, ms = LIMIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Open a real client with `token` in `DENO_KV_ACCESS_TOKEN` (null: unset),
 * restoring the variable afterwards.
 */
async function openClient(url: string, token: string | null = TOKEN): Promise<Deno.Kv> {
  const saved = Deno.env.get("DENO_KV_ACCESS_TOKEN");
  if (token === null) Deno.env.delete("DENO_KV_ACCESS_TOKEN");
  else Deno.env.set("DENO_KV_ACCESS_TOKEN", token);
  try {
    return await bounded(Deno.openKv(url));
  } finally {
    if (saved === undefined) Deno.env.delete("DENO_KV_ACCESS_TOKEN");
    else Deno.env.set("DENO_KV_ACCESS_TOKEN", saved);
  }
}

/** Run `fn` with a fresh server and a client on it; the server must end with no internal error. */
async function withServer(
  fn: (kv: Deno.Kv, server: KvConnectServer) => Promise<void>,
): Promise<void> {
  const server = startKvConnectServer({ token: TOKEN });
  let kv: Deno.Kv | undefined;
  try {
    kv = await openClient(server.url);
    await bounded(fn(kv, server));
    assert.deepEqual(server.internalErrors, []);
  } finally {
    kv?.close();
    await server.close();
  }
}

/** Entries without versionstamps (they differ between stores). */
function strip(entries: Deno.KvEntryMaybe<unknown>[]): { key: Deno.KvKey; value: unknown }[] {
  return entries.map((e) => ({ key: e.key, value: e.value }));
}

async function listAll(kv: Deno.Kv, sel: Deno.KvListSelector, opts?: Deno.KvListOptions) {
  const out: Deno.KvEntry<unknown>[] = [];
  for await (const e of kv.list(sel, opts)) out.push(e);
  return out;
}

Deno.test("kv connect: set, get, getMany, delete round-trip values of every encoding", async () => {
  await withServer(async (kv) => {
    const values: [Deno.KvKey, unknown][] = [
      [["str"], "hello"],
      [["obj"], { a: 1, nested: [true, null, "x"], d: new Date(0) }],
      [["bytes"], new Uint8Array([0, 1, 255])], // stored as raw bytes
      [["u64"], new Deno.KvU64(2n ** 64n - 1n)], // stored as LE64
      [["big"], -(2n ** 70n)],
      [["map"], new Map([["k", 1]])],
      [["empty"], ""],
    ];
    let last = "";
    for (const [key, value] of values) {
      const res = await kv.set(key, value);
      assert.equal(res.ok, true);
      assert.ok(res.versionstamp > last, "versionstamps increase with every commit");
      last = res.versionstamp;
    }
    for (const [key, value] of values) {
      const e = await kv.get(key);
      assert.deepEqual(e.key, key);
      assert.deepEqual(e.value, value);
      assert.match(e.versionstamp!, /^[0-9a-f]{20}$/);
    }
    const many = await kv.getMany([["str"], ["nope"], ["u64"]]);
    assert.deepEqual(strip(many), [
      { key: ["str"], value: "hello" },
      { key: ["nope"], value: null },
      { key: ["u64"], value: new Deno.KvU64(2n ** 64n - 1n) },
    ]);
    assert.equal(many[1].versionstamp, null);
    // an unchanged key keeps its versionstamp; a new write gets a new one
    const before = await kv.get(["str"]);
    await kv.set(["other"], 1);
    assert.equal((await kv.get(["str"])).versionstamp, before.versionstamp);
    await kv.set(["str"], "again");
    assert.notEqual((await kv.get(["str"])).versionstamp, before.versionstamp);

    await kv.delete(["str"]);
    assert.deepEqual(await kv.get(["str"]), { key: ["str"], value: null, versionstamp: null });
    await kv.delete(["never-there"]); // deleting an absent key is fine
  });
});

Deno.test("kv connect: list by prefix and range, reverse, limit and cursor, as a local store does", async () => {
  await withServer(async (remote) => {
    const local = await Deno.openKv(":memory:");
    try {
      // Key parts of every type, so the order is the byte order of their encoding.
      const keys: Deno.KvKey[] = [
        ["u", 1],
        ["u", -1],
        ["u", 0.5],
        ["u", 10n],
        ["u", -3n],
        ["u", "a"],
        ["u", "a\u0000"],
        ["u", "b"],
        ["u", "é"],
        ["u", new Uint8Array([0])],
        ["u", new Uint8Array([])],
        ["u", true],
        ["u", false],
        ["u", "a", "deeper"],
        ["u2", 1], // a neighbour, not under ["u"]
        ["t"],
        ["v"],
      ];
      for (const kv of [remote, local]) {
        for (const [i, key] of keys.entries()) await kv.set(key, i);
      }
      const cases: [Deno.KvListSelector, Deno.KvListOptions | undefined][] = [
        [{ prefix: ["u"] }, undefined],
        [{ prefix: ["u"] }, { reverse: true }],
        [{ prefix: ["u"] }, { limit: 3 }],
        [{ prefix: ["u"] }, { limit: 4, reverse: true }],
        [{ prefix: ["u"] }, { batchSize: 2 }], // several snapshot reads, with a cursor
        [{ prefix: ["u"] }, { batchSize: 3, reverse: true, limit: 7 }],
        [{ prefix: ["u"], start: ["u", "a"] }, undefined],
        [{ prefix: ["u"], end: ["u", "b"] }, { reverse: true }],
        [{ start: ["t"], end: ["v"] }, undefined], // end is exclusive
        [{ start: ["u", "a"], end: ["u", true] }, { reverse: true, limit: 5 }],
        [{ prefix: [] }, undefined],
        [{ prefix: ["nothing"] }, undefined],
      ];
      for (const [sel, opts] of cases) {
        const got = strip(await listAll(remote, sel, opts));
        const want = strip(await listAll(local, sel, opts));
        assert.deepEqual(got, want, `list ${JSON.stringify(sel)} ${JSON.stringify(opts)}`);
      }
      assert.equal((await listAll(remote, { prefix: ["u"] })).length, 14);
      // resuming from a cursor
      const it = remote.list({ prefix: ["u"] }, { limit: 5 });
      for await (const _ of it) { /* drain */ }
      const rest = strip(await listAll(remote, { prefix: ["u"] }, { cursor: it.cursor }));
      assert.deepEqual(rest, strip(await listAll(local, { prefix: ["u"] })).slice(5));
    } finally {
      local.close();
    }
  });
});

Deno.test("kv connect: an atomic commit applies all its mutations when its checks pass", async () => {
  await withServer(async (kv) => {
    await kv.set(["a"], "a0");
    await kv.set(["c"], "c0");
    const a = await kv.get(["a"]);
    const res = await kv.atomic()
      .check(a) // unchanged since read
      .check({ key: ["b"], versionstamp: null }) // absent
      .set(["a"], "a1")
      .set(["b"], "b1")
      .delete(["c"])
      .sum(["n"], 5n)
      .commit();
    assert.equal(res.ok, true);
    const after = await kv.getMany([["a"], ["b"], ["c"], ["n"]]);
    assert.deepEqual(after.map((e) => e.value), ["a1", "b1", null, new Deno.KvU64(5n)]);
    // every mutation of a commit gets the commit's versionstamp
    assert.ok(res.ok);
    assert.deepEqual(
      after.map((e) => e.versionstamp),
      [res.versionstamp, res.versionstamp, null, res.versionstamp],
    );
  });
});

Deno.test("kv connect: a failed check fails the whole commit and writes nothing", async () => {
  await withServer(async (kv) => {
    await kv.set(["a"], "a0");
    const stale = await kv.get(["a"]);
    await kv.set(["a"], "a1"); // someone else wrote in between
    await kv.set(["kept"], "k0");
    await kv.set(["n"], new Deno.KvU64(1n));
    const snapshot = await kv.getMany([["a"], ["kept"], ["n"], ["new"]]);

    const cases: [string, Deno.AtomicOperation][] = [
      ["stale versionstamp", kv.atomic().check(stale)],
      ["key expected absent exists", kv.atomic().check({ key: ["kept"], versionstamp: null })],
      [
        "key expected present is absent",
        kv.atomic().check({ key: ["new"], versionstamp: stale.versionstamp }),
      ],
      // one good check does not save a commit with a bad one
      [
        "good then bad",
        kv.atomic().check({ key: ["kept"], versionstamp: snapshot[1].versionstamp }).check(stale),
      ],
    ];
    for (const [name, op] of cases) {
      const res = await op.set(["a"], "lost").delete(["kept"]).set(["new"], "lost")
        .sum(["n"], 10n).commit();
      assert.equal(res.ok, false, name);
      assert.deepEqual(await kv.getMany([["a"], ["kept"], ["n"], ["new"]]), snapshot, name);
    }
    // the same commit with fresh checks goes through
    const fresh = await kv.get(["a"]);
    assert.equal((await kv.atomic().check(fresh).set(["a"], "a2").commit()).ok, true);
    assert.equal((await kv.get(["a"])).value, "a2");
  });
});

Deno.test("kv connect: sum on a fresh and an existing KvU64 (wrapping at 2^64), min and max", async () => {
  await withServer(async (kv) => {
    await kv.atomic().sum(["fresh"], 7n).commit();
    assert.deepEqual((await kv.get(["fresh"])).value, new Deno.KvU64(7n));
    await kv.set(["existing"], new Deno.KvU64(40n));
    await kv.atomic().sum(["existing"], 1n).sum(["fresh"], 1n).commit();
    await kv.atomic().sum(["existing"], 1n).commit();
    assert.deepEqual((await kv.get(["existing"])).value, new Deno.KvU64(42n));
    assert.deepEqual((await kv.get(["fresh"])).value, new Deno.KvU64(8n));
    await kv.set(["wrap"], new Deno.KvU64(2n ** 64n - 1n));
    await kv.atomic().sum(["wrap"], 3n).commit();
    assert.deepEqual((await kv.get(["wrap"])).value, new Deno.KvU64(2n));

    await kv.atomic().min(["lo"], 5n).max(["hi"], 5n).commit(); // fresh: the operand
    await kv.atomic().min(["lo"], 9n).max(["hi"], 9n).commit();
    await kv.atomic().min(["lo"], 3n).max(["hi"], 1n).commit();
    const [lo, hi] = await kv.getMany([["lo"], ["hi"]]);
    assert.deepEqual([lo.value, hi.value], [new Deno.KvU64(3n), new Deno.KvU64(9n)]);

    // summing into a value that is not a KvU64 is refused, and the commit writes nothing
    await kv.set(["text"], "not a number");
    await assert.rejects(kv.atomic().set(["side"], 1).sum(["text"], 1n).commit(), /U64/);
    assert.equal((await kv.get(["side"])).value, null);
    assert.equal((await kv.get(["text"])).value, "not a number");
  });
});

Deno.test("kv connect: expireIn makes a key disappear", async () => {
  await withServer(async (kv) => {
    await kv.atomic().set(["also-short"], 1, { expireIn: 300 }).commit();
    await kv.set(["short"], "soon gone", { expireIn: 300 });
    await kv.set(["long"], "stays", { expireIn: 60_000 });
    assert.equal((await kv.get(["short"])).value, "soon gone");
    const deadline = Date.now() + 3_000;
    while ((await kv.get(["short"])).value !== null) {
      assert.ok(Date.now() < deadline, "the key did not expire");
      await sleep(50);
    }
    assert.deepEqual(strip(await listAll(kv, { prefix: [] })), [{ key: ["long"], value: "stays" }]);
    // an expired key counts as absent for checks too
    assert.equal(
      (await kv.atomic().check({ key: ["also-short"], versionstamp: null }).set(["x"], 1).commit())
        .ok,
      true,
    );
  });
});

Deno.test("kv connect: two clients see each other's commits at once", async () => {
  await withServer(async (a, server) => {
    const b = await openClient(server.url);
    try {
      await a.set(["shared"], 1);
      assert.equal((await b.get(["shared"])).value, 1);
      const seenByA = await a.get(["shared"]);
      const seenByB = await b.get(["shared"]);
      assert.equal((await b.atomic().check(seenByB).set(["shared"], 2).commit()).ok, true);
      assert.equal((await a.atomic().check(seenByA).set(["shared"], 3).commit()).ok, false);
      assert.equal((await a.get(["shared"])).value, 2);
    } finally {
      b.close();
    }
  });
});

Deno.test("kv connect: a wrong or missing access token fails to open or use the store", async () => {
  const server = startKvConnectServer({ token: TOKEN });
  try {
    for (const token of ["wrong-token", "", null]) {
      let kv: Deno.Kv | undefined;
      try {
        kv = await openClient(server.url, token);
      } catch (err) {
        // refused at open (what Deno 2.9 does)
        assert.match(String(err), /401|Invalid access token|DENO_KV_ACCESS_TOKEN/);
        continue;
      }
      try {
        await assert.rejects(bounded(kv.get(["a"])));
      } finally {
        kv.close();
      }
    }
    assert.equal(server.stats.snapshotReads, 0);
    // the right token still works
    const kv = await openClient(server.url);
    await kv.set(["ok"], true);
    assert.equal((await kv.get(["ok"])).value, true);
    kv.close();
    assert.deepEqual(server.internalErrors, []);
  } finally {
    await server.close();
  }
});

Deno.test("kv connect: the server's limits apply to a whole commit", async () => {
  await withServer(async (kv) => {
    const op = kv.atomic();
    for (let i = 0; i < 11; i++) op.check({ key: ["c", i], versionstamp: null });
    op.set(["written"], true);
    await assert.rejects(op.commit(), /Too many checks/);
    assert.equal((await kv.get(["written"])).value, null);
    await assert.rejects(kv.set(["big"], new Uint8Array(65537)), /./);
    assert.equal((await kv.getMany(Array.from({ length: 10 }, (_, i) => ["k", i]))).length, 10);
  });
});

Deno.test("kv connect: watch and enqueue are refused without harming the server", async () => {
  await withServer(async (kv, server) => {
    const reader = kv.watch([["w"]]).getReader();
    await assert.rejects(reader.read());
    reader.releaseLock();
    await assert.rejects(kv.enqueue("msg"));
    await kv.set(["after"], 1);
    assert.equal((await kv.get(["after"])).value, 1);
    assert.ok(server.stats.rejected >= 1);
  });
});

// ---------------------------------------------------------------------------
// Raw requests: what the client never sends
// ---------------------------------------------------------------------------

/** Protobuf bytes of a varint. */
function varint(v: bigint | number): number[] {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return out;
}
/** A length-delimited field. */
function ld(field: number, bytes: number[]): number[] {
  return [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes];
}
/** A varint field. */
function vf(field: number, v: bigint | number): number[] {
  return [...varint(field << 3), ...varint(v)];
}

const range = (limit: number) => ld(1, [...ld(1, [1]), ...ld(2, [0xff]), ...vf(3, limit)]);
const setMutation = (extra: number[] = []) =>
  ld(2, [...ld(1, [2, 0x61, 0]), ...ld(2, [...ld(1, [1, 2]), ...vf(2, 3)]), ...vf(3, 1), ...extra]);

/** Top-level fields of a protobuf message: varints as bigint, length-delimited as bytes. */
function fields(buf: Uint8Array): [number, bigint | Uint8Array][] {
  const out: [number, bigint | Uint8Array][] = [];
  let pos = 0;
  const next = () => {
    let v = 0n;
    for (let shift = 0n;; shift += 7n) {
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
  };
  while (pos < buf.length) {
    const tag = Number(next());
    if ((tag & 7) === 0) out.push([tag >> 3, next()]);
    else if ((tag & 7) === 2) {
      const n = Number(next());
      out.push([tag >> 3, buf.slice(pos, pos + n)]);
      pos += n;
    } else throw new Error(`unexpected wire type ${tag & 7}`);
  }
  return out;
}

/** The values of field `n`. */
function field<T extends bigint | Uint8Array>(fs: [number, bigint | Uint8Array][], n: number): T[] {
  return fs.filter(([f]) => f === n).map(([, v]) => v as T);
}

/** Metadata exchange by hand: the data path URL and the headers of its requests. */
async function dataPath(server: KvConnectServer) {
  const res = await fetch(server.url, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ supportedVersions: [1, 2, 3] }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const md = await res.json();
  return {
    md,
    endpoint: new URL(md.endpoints[0].url, server.url + "/").href,
    headers: {
      authorization: `Bearer ${md.token}`,
      "x-denokv-version": String(md.version),
      "x-denokv-database-id": md.databaseId,
      "content-type": "application/x-protobuf",
    },
  };
}

Deno.test("kv connect: raw data path answers: limit, reverse, statuses, failed checks", async () => {
  await withServer(async (kv, server) => {
    for (const i of [1, 2, 3]) await kv.set(["r", i], i);
    const { endpoint, headers } = await dataPath(server);
    const call = async (op: string, body: number[]) => {
      const res = await fetch(`${endpoint}/${op}`, {
        method: "POST",
        headers,
        body: new Uint8Array(body),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/x-protobuf");
      return fields(new Uint8Array(await res.arrayBuffer()));
    };
    const readRange = async (limit: number, reverse = false) => {
      const out = await call("snapshot_read", [
        ...ld(1, [...ld(1, [1]), ...ld(2, [0xff]), ...vf(3, limit), ...vf(4, reverse ? 1 : 0)]),
        ...range(5), // a second range: answered in order
      ]);
      assert.deepEqual(field(out, 8), [1n]); // SR_SUCCESS
      assert.deepEqual(field(out, 4), [1n]); // read_is_strongly_consistent
      const ranges = field<Uint8Array>(out, 1);
      assert.equal(ranges.length, 2);
      return field<Uint8Array>(fields(ranges[0]), 1).map((e) => {
        const f = fields(e);
        return { key: field<Uint8Array>(f, 1)[0], vs: field<Uint8Array>(f, 4)[0] };
      });
    };
    const all = await readRange(10);
    assert.equal(all.length, 3);
    assert.equal((await readRange(2)).length, 2);
    assert.deepEqual(await readRange(2), all.slice(0, 2));
    assert.deepEqual(await readRange(1, true), [all[2]]);
    assert.deepEqual(await readRange(10, true), [...all].reverse());
    assert.ok(all.every((e) => e.vs.length === 10));

    // a check failure reports the failing check indexes and writes nothing
    const check = (key: Uint8Array, vs: Uint8Array) =>
      ld(1, [...ld(1, [...key]), ...ld(2, [...vs])]);
    const del = (key: Uint8Array) => ld(2, [...ld(1, [...key]), ...vf(3, 2)]);
    const failed = await call("atomic_write", [
      ...check(all[0].key, all[0].vs),
      ...check(all[1].key, new Uint8Array(10).fill(9)),
      ...check(all[2].key, new Uint8Array(0)),
      ...del(all[0].key),
    ]);
    assert.deepEqual(field(failed, 1), [2n]); // AW_CHECK_FAILURE
    const failedChecks = field<Uint8Array>(failed, 4).flatMap((b) => [...b]);
    assert.deepEqual(failedChecks, [1, 2]);
    assert.equal((await readRange(10)).length, 3);
    const ok = await call("atomic_write", [...check(all[0].key, all[0].vs), ...del(all[0].key)]);
    assert.deepEqual(field(ok, 1), [1n]); // AW_SUCCESS
    const [vs] = field<Uint8Array>(ok, 2);
    assert.equal(vs.length, 10);
    // a later commit has a greater versionstamp (bytes compared in order)
    const newer = vs.findIndex((b, i) => b !== all[2].vs[i]);
    assert.ok(newer >= 0 && vs[newer] > all[2].vs[newer]);
    assert.equal((await readRange(10)).length, 2);
  });
});

Deno.test("kv connect: malformed requests get a 4xx and the server keeps serving", async () => {
  await withServer(async (kv, server) => {
    const post = (path: string, body: BodyInit | null, headers: Record<string, string> = {}) =>
      fetch(new URL(path, server.url), { method: "POST", body, headers }).then(async (r) => ({
        status: r.status,
        text: await r.text(),
      }));
    const auth = { authorization: `Bearer ${TOKEN}` };

    // metadata exchange
    const meta = await post("/", JSON.stringify({ supportedVersions: [1, 2, 3] }), auth);
    assert.equal(meta.status, 200);
    const md = JSON.parse(meta.text);
    assert.equal(md.version, 3);
    assert.equal(md.endpoints[0].consistency, "strong");
    assert.ok(Date.parse(md.expiresAt) > Date.now());
    assert.equal(
      JSON.parse((await post("/", '{"supportedVersions":[1,2]}', auth)).text).version,
      2,
    );
    const metaCases: [string, BodyInit | null, Record<string, string>, number][] = [
      ["no token", '{"supportedVersions":[2]}', {}, 401],
      ["wrong token", '{"supportedVersions":[2]}', { authorization: "Bearer nope" }, 401],
      ["not bearer", '{"supportedVersions":[2]}', { authorization: `Basic ${TOKEN}` }, 401],
      ["no body (version 1 only)", null, auth, 400],
      ["not JSON", "{supportedVersions", auth, 400],
      ["only version 1", '{"supportedVersions":[1]}', auth, 400],
      ["versions not a list", '{"supportedVersions":"2"}', auth, 400],
      ["extra property", '{"supportedVersions":[2],"x":1}', auth, 400],
      ["JSON null", "null", auth, 400],
    ];
    for (const [name, body, headers, status] of metaCases) {
      assert.equal((await post("/", body, headers)).status, status, name);
    }
    const get = await fetch(server.url);
    assert.equal(get.status, 405);
    await get.body?.cancel();

    // data path
    const endpoint = new URL(md.endpoints[0].url, server.url).pathname;
    const data = {
      authorization: `Bearer ${md.token}`,
      "x-denokv-version": "3",
      "x-denokv-database-id": md.databaseId,
      "content-type": "application/x-protobuf",
    };
    const read = (body: number[], headers: Record<string, string> = data) =>
      post(`${endpoint}/snapshot_read`, new Uint8Array(body), headers);
    const write = (body: number[], headers: Record<string, string> = data) =>
      post(`${endpoint}/atomic_write`, new Uint8Array(body), headers);
    assert.equal((await read(range(1))).status, 200);
    assert.equal((await read([])).status, 200); // no ranges is a valid (empty) read
    assert.equal((await write(setMutation())).status, 200);
    const headerCases: [string, Record<string, string>, number][] = [
      ["no token", { ...data, authorization: "" }, 401],
      ["access token instead of data token", { ...data, ...auth }, 401],
      ["no version", { ...data, "x-denokv-version": "" }, 400],
      ["version 1", { ...data, "x-denokv-version": "1" }, 400],
      ["wrong database", { ...data, "x-denokv-database-id": crypto.randomUUID() }, 400],
    ];
    for (const [name, headers, status] of headerCases) {
      assert.equal((await read(range(1), headers)).status, status, `read: ${name}`);
      assert.equal((await write(setMutation(), headers)).status, status, `write: ${name}`);
    }
    assert.equal((await post(`${endpoint}/nope`, "", data)).status, 404);
    assert.equal(
      (await post(`${endpoint}/watch`, new Uint8Array(ld(1, ld(1, [1]))), data)).status,
      400,
    );

    const readCases: [string, number[]][] = [
      ["truncated varint", [0x0a, 0x80]],
      ["length past the end", [0x0a, 0x05, 0x01]],
      ["varint where a message belongs", vf(1, 1)],
      ["group wire type", [0x0b]],
      ["field number 0", [0x00, 0x00]],
      ["limit 0", range(0)],
      ["negative limit", range(-1)],
      ["too many ranges", Array.from({ length: 11 }, () => range(1)).flat()],
      ["too many entries", [...range(600), ...range(600)]],
      ["key too long", ld(1, [...ld(1, new Array(2050).fill(1)), ...vf(3, 1)])],
    ];
    for (const [name, body] of readCases) {
      const res = await read(body);
      assert.equal(res.status, 400, `read: ${name}: ${res.text}`);
    }
    const check = (vs: number[]) => ld(1, [...ld(1, [2, 0x61, 0]), ...ld(2, vs)]);
    const writeCases: [string, number[]][] = [
      ["5-byte versionstamp", check([1, 2, 3, 4, 5])],
      ["set without value", ld(2, [...ld(1, [2, 0x61, 0]), ...vf(3, 1)])],
      [
        "unknown mutation type",
        ld(2, [...ld(1, [2, 0x61, 0]), ...ld(2, [...ld(1, [1]), ...vf(2, 3)]), ...vf(3, 7)]),
      ],
      ["no mutation type", ld(2, [...ld(1, [2, 0x61, 0]), ...ld(2, [...ld(1, [1]), ...vf(2, 3)])])],
      [
        "unknown encoding",
        ld(2, [...ld(1, [2, 0x61, 0]), ...ld(2, [...ld(1, [1]), ...vf(2, 9)]), ...vf(3, 1)]),
      ],
      [
        "LE64 of 3 bytes",
        ld(2, [...ld(1, [2, 0x61, 0]), ...ld(2, [...ld(1, [1, 2, 3]), ...vf(2, 2)]), ...vf(3, 3)]),
      ],
      [
        "V8 sum operand",
        ld(2, [...ld(1, [2, 0x61, 0]), ...ld(2, [...ld(1, [1]), ...vf(2, 1)]), ...vf(3, 3)]),
      ],
      ["expire_at_ms -5", setMutation(vf(4, -5))],
      ["enqueue", [...setMutation(), ...ld(3, ld(1, [1]))]],
      ["too many checks", Array.from({ length: 11 }, () => check([])).flat()],
      [
        "value too large",
        ld(2, [
          ...ld(1, [2, 0x62, 0]),
          ...ld(2, [...ld(1, new Array(65537).fill(0)), ...vf(2, 3)]),
          ...vf(3, 1),
        ]),
      ],
    ];
    for (const [name, body] of writeCases) {
      const res = await write(body);
      assert.equal(res.status, 400, `write: ${name}: ${res.text}`);
    }
    assert.equal((await write(setMutation(vf(4, -1)))).status, 200); // -1: no expiry
    const huge = await post(`${endpoint}/atomic_write`, new Uint8Array(3 * 1024 * 1024), data);
    assert.equal(huge.status, 413);

    // fuzz: random bytes, and truncated or bit-flipped valid messages
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const valid = [
      ...check([]),
      ...setMutation(vf(4, 1)),
      ...ld(2, [
        ...ld(1, [2, 0x6e, 0]),
        ...ld(2, [...ld(1, [1, 0, 0, 0, 0, 0, 0, 0]), ...vf(2, 2)]),
        ...vf(3, 3),
      ]),
    ];
    for (let i = 0; i < 300; i++) {
      let body: number[];
      if (i % 3 === 0) {
        body = Array.from({ length: Math.floor(random() * 40) }, () => Math.floor(random() * 256));
      } else if (i % 3 === 1) body = valid.slice(0, Math.floor(random() * valid.length));
      else {
        body = [...valid];
        body[Math.floor(random() * body.length)] ^= 1 << Math.floor(random() * 8);
      }
      for (const res of [await read(body), await write(body)]) {
        assert.ok(
          res.status === 200 || (res.status >= 400 && res.status < 500),
          `fuzz ${i}: ${res.status} ${res.text}`,
        );
      }
    }

    // the real client still works
    await kv.set(["still"], "serving");
    assert.equal((await kv.get(["still"])).value, "serving");
    assert.deepEqual(server.internalErrors, []);
  });
});
