/** The `payments/main.ts` command line. */
import assert from "node:assert/strict";
import { spawnServer } from "./_server_process.ts";
import { sleep } from "../support/wait.ts";

const ROOT = new URL("../../", import.meta.url);

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "payments/main.ts", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: r.code, out: d.decode(r.stdout), err: d.decode(r.stderr) };
}

Deno.test("cli: --help prints the flags; bad flags and ports exit 2", async () => {
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  for (
    const flag of [
      "--hostname",
      "--port",
      "--kv",
      "--kv-timeout",
      "--base-path",
      "--token",
      "--cert",
    ]
  ) {
    assert.ok(help.out.includes(flag), flag);
  }
  assert.equal((await run(["--nope"])).code, 2);
  assert.equal((await run(["--port", "70000"])).code, 2);
  assert.equal((await run(["--cert", "x.pem"])).code, 2);
  assert.equal((await run(["--kv-timeout", "0"])).code, 2);
  assert.equal((await run(["--kv-timeout", "soon"])).code, 2);
  assert.equal((await run(["--body-timeout", "-1"])).code, 2);
  assert.equal((await run(["--drain-timeout", "1.5"])).code, 2);
});

Deno.test("cli: PAYMENTS_TOKENS and a generated token", async () => {
  const a = await spawnServer(["--port", "0", "--kv", ":memory:"], {
    PAYMENTS_TOKENS: "one, two",
  });
  try {
    for (const t of ["one", "two"]) {
      const r = await fetch(`${a.url}/vendor/v4/customers/x/cards`, {
        headers: { authorization: `Bearer ${t}` },
      });
      assert.equal(r.status, 200, t);
      await r.body?.cancel();
    }
    assert.ok(!a.lines.some((l) => l.startsWith("Generated bearer token")));
  } finally {
    await a.stop();
  }
  const b = await spawnServer(["--port", "0", "--kv", ":memory:"]);
  try {
    const line = b.lines.find((l) => l.startsWith("Generated bearer token: "));
    assert.ok(line);
    const token = line.slice("Generated bearer token: ".length);
    const r = await fetch(`${b.url}/vendor/v4/customers/x/cards`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(r.status, 200);
    await r.body?.cancel();
  } finally {
    await b.stop();
  }
});

Deno.test("cli: a store, address or certificate it cannot use: one line saying which, exit 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "payments-cli-" });
  const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const cases: [string[], RegExp][] = [
      [["--kv", "http://127.0.0.1:1"], /cannot open the KV store http:\/\/127\.0\.0\.1:1: /],
      [["--kv", dir], /cannot open the KV store /],
      [["--kv", ":memory:", "--port", String(busy.addr.port)], /address is already in use/],
      [
        ["--kv", ":memory:", "--port", "0", "--cert", `${dir}/no.pem`, "--key", `${dir}/no.pem`],
        /cannot read --cert /,
      ],
    ];
    for (const [args, expected] of cases) {
      const r = await run(["--token", "t", ...args]);
      assert.equal(r.code, 1, args.join(" "));
      const lines = r.err.trim().split("\n");
      assert.equal(lines.length, 1, r.err);
      assert.match(lines[0], /^payments: /);
      assert.match(lines[0], expected);
      assert.doesNotMatch(r.err, /Uncaught|^\s+at /m);
    }
  } finally {
    busy.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A raw HTTP/1.1 request that sends its headers and only the start of its body. */
async function stalledUpload(port: number): Promise<Deno.TcpConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(
      "POST /vendor/v4/payments/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n" +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"amount":',
    ),
  );
  return conn;
}

Deno.test("cli: a stalled upload gets 408 after --body-timeout, and never holds up shutdown past --drain-timeout", async () => {
  const inMemory = ["--port", "0", "--kv", ":memory:", "--token", "t"];
  const quick = await spawnServer([...inMemory, "--body-timeout", "300"]);
  const conn = await stalledUpload(Number(new URL(quick.url).port));
  try {
    const buf = new Uint8Array(4096);
    const n = await conn.read(buf);
    assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 408 /);
  } finally {
    conn.close();
    await quick.stop();
  }
  // A long body deadline: shutdown waits for the upload only --drain-timeout.
  const slow = await spawnServer([
    ...inMemory,
    "--body-timeout",
    "60000",
    "--drain-timeout",
    "500",
  ]);
  const held = await stalledUpload(Number(new URL(slow.url).port));
  try {
    await sleep(200); // the request is in the handler
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), 8_000));
    const outcome = await Promise.race([slow.stop(), late]);
    clearTimeout(timer);
    if (outcome === "late") await slow.kill();
    assert.notEqual(outcome, "late", "shutdown waited for the stalled upload");
    assert.equal((outcome as Deno.CommandStatus).code, 0);
  } finally {
    held.close();
  }
});
