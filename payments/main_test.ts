import assert from "node:assert/strict";
import { defaultMaxConnections, openKvAt } from "./main.ts";

Deno.test("openKvAt: a file path gets its folder created", async () => {
  const dir = await Deno.makeTempDir();
  const kv = await openKvAt(`${dir}/a/b/payments.kv`);
  await kv.set(["k"], 1);
  kv.close();
  assert.ok((await Deno.stat(`${dir}/a/b/payments.kv`)).isFile);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("openKvAt: :memory: works", async () => {
  const kv = await openKvAt(":memory:");
  assert.equal((await kv.get(["k"])).value, null);
  kv.close();
});

Deno.test("openKvAt: an http(s) URL goes to KV Connect (needs DENO_KV_ACCESS_TOKEN)", async () => {
  const saved = Deno.env.get("DENO_KV_ACCESS_TOKEN");
  Deno.env.delete("DENO_KV_ACCESS_TOKEN");
  try {
    await assert.rejects(openKvAt("http://127.0.0.1:9/"), /DENO_KV_ACCESS_TOKEN/);
    Deno.env.set("DENO_KV_ACCESS_TOKEN", "t");
    await assert.rejects(openKvAt("http://127.0.0.1:9/"), /connect|refused/i);
  } finally {
    if (saved === undefined) Deno.env.delete("DENO_KV_ACCESS_TOKEN");
    else Deno.env.set("DENO_KV_ACCESS_TOKEN", saved);
  }
});

Deno.test("openKvAt: a new store file, its -wal and -shm are created 0600 (its new folder 0700); an existing file keeps its mode", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/data/payments.kv`;
    const kv = await openKvAt(path);
    await kv.set(["k"], "v".repeat(1000));
    // While it is open: SQLite removes the -wal and -shm files on close.
    const names: string[] = [];
    for await (const e of Deno.readDir(`${dir}/data`)) names.push(e.name);
    assert.ok(names.includes("payments.kv-wal"), `files: ${names}`);
    for (const name of names) {
      assert.equal((await Deno.stat(`${dir}/data/${name}`)).mode! & 0o777, 0o600, name);
    }
    kv.close();
    assert.equal((await Deno.stat(`${dir}/data`)).mode! & 0o777, 0o700);

    const chosen = `${dir}/chosen.kv`;
    (await Deno.openKv(chosen)).close();
    await Deno.chmod(chosen, 0o640);
    const again = await openKvAt(chosen);
    await again.set(["k"], 1);
    again.close();
    assert.equal((await Deno.stat(chosen)).mode! & 0o777, 0o640);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("defaultMaxConnections: 4096, or the open-files limit less 128 (at least 16)", () => {
  const limits = (soft: string) =>
    `Limit                     Soft Limit           Hard Limit           Units     \n` +
    `Max open files            ${soft}                 524288               files     \n`;
  assert.equal(defaultMaxConnections(limits("1048576")), 4096);
  assert.equal(defaultMaxConnections(limits("1024")), 896);
  assert.equal(defaultMaxConnections(limits("64")), 16);
  assert.equal(defaultMaxConnections(limits("unlimited")), 4096);
  assert.equal(defaultMaxConnections(undefined), 4096);
});
