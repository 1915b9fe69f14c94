import assert from "node:assert/strict";
import { getLogger, type LogRecord } from "@logtape/logtape";
import {
  formatLine,
  LEVEL_NAMES,
  LogConfigError,
  parseLevel,
  parseRustLog,
  redactedFormatLine,
  resolveLogFilePath,
  setupLogging,
  teardownLogging,
} from "./logging.ts";

function record(overrides: Partial<LogRecord> = {}): LogRecord {
  return {
    category: ["proxy", "health"],
    level: "info",
    message: ["backend ", "b1", " is up"],
    rawMessage: "backend {id} is up",
    timestamp: Date.UTC(2026, 0, 2, 3, 4, 5, 678),
    properties: { id: "b1" },
    ...overrides,
  };
}

/** Sets up logging into an array, runs `fn`, tears down, returns the lines. */
async function capture(
  opts: { level?: string; rustLog?: string },
  fn: () => void,
): Promise<string[]> {
  const lines: string[] = [];
  await setupLogging({ service: "test", ...opts, sink: (line) => lines.push(line) });
  try {
    fn();
  } finally {
    await teardownLogging();
  }
  return lines;
}

/** Strips the timestamp so lines can be compared exactly. */
function body(line: string): string {
  assert.match(line, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] /);
  return line.slice(22);
}

function logAll(category: string[]): void {
  const log = getLogger(category);
  log.trace("t");
  log.debug("d");
  log.info("i");
  log.warn("w");
  log.error("e");
}

Deno.test("parseLevel: spec names and aliases", () => {
  assert.equal(parseLevel("whisper"), "trace");
  assert.equal(parseLevel("haunt"), "debug");
  assert.equal(parseLevel("ghost"), "info");
  assert.equal(parseLevel("spooky"), "info");
  assert.equal(parseLevel("scream"), "warning");
  assert.equal(parseLevel("poltergeist"), "error");
  assert.equal(parseLevel("silence"), "off");
});

Deno.test("parseLevel: standard names, case-insensitive", () => {
  assert.equal(parseLevel("trace"), "trace");
  assert.equal(parseLevel("DEBUG"), "debug");
  assert.equal(parseLevel("Info"), "info");
  assert.equal(parseLevel("warn"), "warning");
  assert.equal(parseLevel("WARNING"), "warning");
  assert.equal(parseLevel("error"), "error");
  assert.equal(parseLevel("OFF"), "off");
  assert.equal(parseLevel("GhOsT"), "info");
  for (const name of Object.keys(LEVEL_NAMES)) parseLevel(name.toUpperCase());
});

Deno.test("parseLevel: unknown level names the value and the accepted ones", () => {
  assert.throws(() => parseLevel("banshee"), (err: unknown) => {
    assert.ok(err instanceof LogConfigError);
    assert.match(err.message, /"banshee"/);
    assert.match(err.message, /whisper/);
    assert.match(err.message, /poltergeist/);
    assert.match(err.message, /warn/);
    return true;
  });
  assert.throws(() => parseLevel(""), LogConfigError);
});

Deno.test("formatLine: exact format in UTC", () => {
  assert.equal(
    formatLine(record()),
    "[2026-01-02 03:04:05] [INFO] [proxy::health] backend b1 is up",
  );
  assert.equal(
    formatLine(record({ level: "warning", category: ["payments"], message: ["x"] })),
    "[2026-01-02 03:04:05] [WARN] [payments] x",
  );
  const labels = { trace: "TRACE", debug: "DEBUG", info: "INFO", warning: "WARN", error: "ERROR" };
  for (const [level, label] of Object.entries(labels)) {
    assert.equal(
      formatLine(record({ level: level as LogRecord["level"] })),
      `[2026-01-02 03:04:05] [${label}] [proxy::health] backend b1 is up`,
    );
  }
  assert.equal(
    formatLine(record({ message: ["n=", 42, " o=", { a: 1 }, ""] })),
    "[2026-01-02 03:04:05] [INFO] [proxy::health] n=42 o={ a: 1 }",
  );
});

Deno.test("setupLogging: default level is info, lines reach the sink", async () => {
  const lines = await capture({}, () => logAll(["proxy", "health"]));
  assert.deepEqual(lines.map(body), [
    "[INFO] [proxy::health] i",
    "[WARN] [proxy::health] w",
    "[ERROR] [proxy::health] e",
  ]);
});

Deno.test("setupLogging: configured levels filter, silence logs nothing", async () => {
  assert.equal((await capture({ level: "whisper" }, () => logAll(["a"]))).length, 5);
  assert.equal((await capture({ level: "haunt" }, () => logAll(["a"]))).length, 4);
  assert.equal((await capture({ level: "scream" }, () => logAll(["a"]))).length, 2);
  assert.equal((await capture({ level: "poltergeist" }, () => logAll(["a"]))).length, 1);
  assert.equal((await capture({ level: "silence" }, () => logAll(["a"]))).length, 0);
  await assert.rejects(setupLogging({ service: "x", level: "loud" }), LogConfigError);
});

Deno.test("setupLogging: RUST_LOG global level overrides the configured level", async () => {
  const lines = await capture({ level: "error", rustLog: "debug" }, () => logAll(["a"]));
  assert.equal(lines.length, 4);
  const quiet = await capture({ level: "trace", rustLog: "off" }, () => logAll(["a"]));
  assert.equal(quiet.length, 0);
  // Empty RUST_LOG is treated as unset.
  assert.equal((await capture({ level: "warn", rustLog: "" }, () => logAll(["a"]))).length, 2);
});

Deno.test("setupLogging: RUST_LOG per module applies to children, not siblings", async () => {
  const lines = await capture({ rustLog: "warn,proxy::health=trace" }, () => {
    logAll(["proxy", "health"]);
    logAll(["proxy", "health", "probe"]);
    logAll(["proxy", "router"]);
    logAll(["proxy"]);
  });
  const by = (cat: string) => lines.filter((l) => l.includes(`[${cat}] `)).length;
  assert.equal(by("proxy::health"), 5);
  assert.equal(by("proxy::health::probe"), 5);
  assert.equal(by("proxy::router"), 2);
  assert.equal(by("proxy"), 2);
});

Deno.test("setupLogging: RUST_LOG module levels without a global keep the configured level", async () => {
  const lines = await capture({ level: "error", rustLog: "payments=haunt,proxy=off" }, () => {
    logAll(["payments", "store"]);
    logAll(["proxy"]);
    logAll(["other"]);
  });
  assert.equal(lines.filter((l) => l.includes("[payments::store]")).length, 4);
  assert.equal(lines.filter((l) => l.includes("[proxy]")).length, 0);
  assert.equal(lines.filter((l) => l.includes("[other]")).length, 1);
});

Deno.test("parseRustLog: parses global and module items; rejects invalid values", () => {
  const spec = parseRustLog("info, proxy::health=trace,payments=WARN,");
  assert.equal(spec.global, "info");
  assert.deepEqual([...spec.modules], [["proxy::health", "trace"], ["payments", "warning"]]);
  for (const bad of ["loud", "proxy::health=loud", "proxy:health=info", "=info", "a b=info"]) {
    assert.throws(() => parseRustLog(bad), (err: unknown) => {
      assert.ok(err instanceof LogConfigError);
      assert.match(err.message, /RUST_LOG/);
      return true;
    }, bad);
  }
});

Deno.test("setupLogging: invalid RUST_LOG is a LogConfigError", async () => {
  await assert.rejects(
    setupLogging({ service: "x", rustLog: "info,proxy=shout", sink: () => {} }),
    LogConfigError,
  );
});

Deno.test("setupLogging: file output creates folders and substitutes {service}", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await setupLogging({
      service: "payments",
      file: { enabled: true, path: `${dir}/logs/{service}/{service}.log` },
    });
    getLogger(["payments", "api"]).info("hello {who}", { who: "file" });
    getLogger(["payments", "api"]).debug("hidden");
    await teardownLogging();
    const text = await Deno.readTextFile(`${dir}/logs/payments/payments.log`);
    const lines = text.split("\n");
    assert.equal(lines.length, 2);
    assert.equal(lines[1], "");
    assert.equal(body(lines[0]), "[INFO] [payments::api] hello file");
  } finally {
    await teardownLogging();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("setupLogging: a new log file is created 0600 (its new folder 0700); an existing one keeps its mode", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/logs/payments.log`;
    await setupLogging({ service: "payments", file: { enabled: true, path } });
    getLogger(["payments"]).info("hello");
    await teardownLogging();
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/logs`)).mode! & 0o777, 0o700);
    assert.match(await Deno.readTextFile(path), /hello/);

    const chosen = `${dir}/chosen.log`;
    await Deno.writeTextFile(chosen, "");
    await Deno.chmod(chosen, 0o640);
    await setupLogging({ service: "payments", file: { enabled: true, path: chosen } });
    getLogger(["payments"]).info("again");
    await teardownLogging();
    assert.equal((await Deno.stat(chosen)).mode! & 0o777, 0o640);
  } finally {
    await teardownLogging();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resolveLogFilePath: default /var/log/{service}/{service}.log", () => {
  assert.equal(resolveLogFilePath("spooky"), "/var/log/spooky/spooky.log");
  assert.equal(resolveLogFilePath("payments"), "/var/log/payments/payments.log");
  assert.equal(resolveLogFilePath("payments", "/tmp/{service}.log"), "/tmp/payments.log");
});

Deno.test("setupLogging: unwritable log path is a clear LogConfigError", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/plain`, "not a folder");
    await assert.rejects(
      setupLogging({ service: "spooky", file: { enabled: true, path: `${dir}/plain/x.log` } }),
      (err: unknown) => {
        assert.ok(err instanceof LogConfigError);
        assert.match(err.message, /cannot write log file/);
        assert.ok(err.message.includes(`${dir}/plain/x.log`));
        return true;
      },
    );
  } finally {
    await teardownLogging();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("redaction: card numbers, CVC, secrets and bearer tokens never reach the sink", async () => {
  const lines = await capture({}, () => {
    const log = getLogger(["payments"]);
    log.info("card 4111111111111111 ok");
    log.info("card 4111 1111 1111 1111 and 4111-1111-1111-1111");
    log.info("charge {card}", { card: "5555555555554444" });
    log.info("body cvc=123 password=hunter2 token: abc.def");
    log.info("json {body}", {
      body: '{"cvc":"987","accountNumber":"000123456789","amount":"1.00"}',
    });
    log.info("authorization: Bearer s3cr3t-T0ken");
    log.info("hdr Authorization=Bearer zzz999 then bearer yyy888");
    log.info("fields {cvc} {clientSecret}", { cvc: "321", clientSecret: "shh" });
    log.info("object {obj}", { obj: { cvc: "654", secret: "xyz" } });
  });
  const all = lines.join("\n");
  for (
    const secret of [
      "4111111111111111",
      "4111 1111 1111 1111",
      "4111-1111-1111-1111",
      "5555555555554444",
      "123",
      "hunter2",
      "abc.def",
      "987",
      "000123456789",
      "s3cr3t-T0ken",
      "zzz999",
      "yyy888",
      "321",
      "shh",
      "654",
      "xyz",
    ]
  ) {
    assert.ok(!all.includes(secret), `leaked ${secret} in:\n${all}`);
  }
  assert.match(all, /card XXXX-XXXX-XXXX-XXXX ok/);
  assert.match(all, /cvc=\[REDACTED\] password=\[REDACTED\] token: \[REDACTED\]/);
  assert.match(all, /"cvc":"\[REDACTED\]","accountNumber":"\[REDACTED\]","amount":"1.00"/);
  assert.match(all, /authorization: Bearer \[REDACTED\]/);
});

Deno.test("redaction: tokens and card numbers sent as path segments are redacted", async () => {
  const bearer = "Xq3vA9_kLm2-ZpR7sTu8wYb4cDe5fGh6jKn1oPq0rS"; // 42 base64url characters
  const lines = await capture({ level: "debug" }, () => {
    const log = getLogger(["payments", "http"]);
    const paths = [
      "/vendor/v4/payments/tokens/tok_01M86GGC8E9GP0RFPMH3BPF1",
      "/vendor/v4/payments/tokens/not-a-tok-format-but-still-a-token",
      "/vendor/v4/customers/c1/cards/4111111111111111",
      `/vendor/v4/payments/charges/${bearer}`,
      "/api/session/0123456789abcdef0123456789abcdef01234567/x",
      "/v1/api-keys/sk_live_shh1/rotate",
      "/bearer/opaque.value",
      `/q?sig=${bearer}&tok=tok_ABCDEFGH1234`,
    ];
    for (const path of paths) {
      log.debug("{method} {path} {status}", { method: "GET", path, status: 404 });
    }
    getLogger(["proxy", "app"]).debug("routing to backend {id} ({method} {path})", {
      id: "b1",
      method: "GET",
      path: "/pay/payments/tokens/tok_01M86GGC8E9GP0RFPMH3BPF1?x=1",
    });
  });
  assert.equal(lines.length, 9);
  const all = lines.join("\n");
  for (
    const secret of [
      "01M86GGC8E9GP0RFPMH3BPF1",
      "not-a-tok-format",
      "4111111111111111",
      bearer,
      "0123456789abcdef0123456789abcdef01234567",
      "sk_live_shh1",
      "opaque.value",
      "ABCDEFGH1234",
    ]
  ) {
    assert.ok(!all.includes(secret), `leaked ${secret} in:\n${all}`);
  }
  assert.equal(
    body(lines[0]),
    "[DEBUG] [payments::http] GET /vendor/v4/payments/tokens/[REDACTED] 404",
  );
  assert.match(lines[5], /\/v1\/api-keys\/\[REDACTED\]\/rotate 404$/);
  assert.match(lines[8], /\/pay\/payments\/tokens\/\[REDACTED\]\?x=1\)$/);
});

Deno.test("redaction: ordinary paths and ids stay readable", () => {
  for (
    const path of [
      "POST /vendor/v4/payments/tokens 201",
      "GET /vendor/v4/payments/charges/ch_01M86GGC8E9GP0RFPMH3BPF1 200",
      "POST /vendor/v4/payments/txn-requests/550e8400-e29b-41d4-a716-446655440000/void 201",
      "GET /vendor/v4/customers/customer-42/bank-accounts?bankAccountId=ba_01M86GGC8E9GP0RFPMH3BPF1",
    ]
  ) {
    assert.ok(redactedFormatLine(record({ message: [path] })).endsWith(` ${path}`), path);
  }
});

Deno.test("redaction: ordinary numbers and text stay intact", () => {
  const line = redactedFormatLine(
    record({ message: ["took 1234 ms, id 1234567890123 (not Luhn), amount=10.00 status=ok"] }),
  );
  assert.match(line, /took 1234 ms, id 1234567890123 \(not Luhn\), amount=10\.00 status=ok$/);
});

Deno.test("setupLogging: default stream is stderr; stdout stays clean", async () => {
  const code = `
    import { getLogger } from "@logtape/logtape";
    import { setupLogging, teardownLogging } from ${
    JSON.stringify(import.meta.resolve("./logging.ts"))
  };
    await setupLogging({ service: "spooky", level: "scream" });
    getLogger(["proxy", "admin"]).info("not shown");
    getLogger(["proxy", "admin"]).warn("card {n}", { n: "4111111111111111" });
    await teardownLogging();
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--no-check",
      "--config",
      new URL("../deno.json", import.meta.url).pathname,
      code,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.ok(out.success, stderr);
  assert.equal(new TextDecoder().decode(out.stdout), "");
  const lines = stderr.split("\n");
  assert.equal(lines.length, 2, stderr);
  assert.equal(body(lines[0]), "[WARN] [proxy::admin] card XXXX-XXXX-XXXX-XXXX");
});

Deno.test("#31.1: setupLogging: a line logged while a span is active ends with its ids, unredacted; others as before", async () => {
  const lines: string[] = [];
  let active: { traceId: string; spanId: string } | undefined;
  await setupLogging({
    service: "test",
    sink: (line) => lines.push(line),
    spanIds: () => active,
  });
  try {
    const log = getLogger(["proxy", "upstream"]);
    log.info("outside a span");
    active = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331" };
    log.info("inside a span, at /x/0af7651916cd43dd8448eb211c80319c");
  } finally {
    await teardownLogging();
  }
  assert.deepEqual(lines.map(body), [
    "[INFO] [proxy::upstream] outside a span",
    "[INFO] [proxy::upstream] inside a span, at /x/[REDACTED]" +
    " trace_id=0af7651916cd43dd8448eb211c80319c span_id=b7ad6b7169203331",
  ]);
});
