import assert from "node:assert/strict";
import { openKvAt } from "./main.ts";

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
