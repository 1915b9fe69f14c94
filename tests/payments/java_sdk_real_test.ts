/**
 * Intuit's Java payments SDK itself (not a reproduction): compiled from its
 * source with `javac` and run through the full flow of issue #22
 * (`java_sdk/Flow.java`) against `deno task payments` with its defaults and
 * only the SDK's base URL changed.
 *
 * Needs what CI may not have, so it is skipped (with a message) unless:
 * `javac`/`java` on PATH; `PAYMENTS_JAVA_SDK_DIR` naming a checkout of
 * `intuit/QuickBooks-V3-Java-SDK` (the SDK is not vendored); and the SDK's
 * dependencies as jars, from `PAYMENTS_JAVA_CLASSPATH` or found in
 * `~/.m2/repository` (Jackson, Apache HttpClient 4, commons-lang 2,
 * commons-logging, commons-codec, slf4j-api). `java_sdk_wire_test.ts`
 * checks the same flow on the wire in every run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawnServer } from "./_server_process.ts";
import { recordSkip } from "../support/tools.ts";

function onPath(cmd: string): boolean {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/${cmd}`).isFile) return true;
    } catch {
      // not here
    }
  }
  return false;
}

function versionsOf(dir: string): string[] {
  try {
    const names = [...Deno.readDirSync(dir)].filter((e) => e.isDirectory).map((e) => e.name);
    const key = (v: string) => v.split(/[.-]/).map((p) => Number(p) || 0);
    return names.sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      for (let i = 0; i < Math.max(x.length, y.length); i++) {
        if ((x[i] ?? 0) !== (y[i] ?? 0)) return (y[i] ?? 0) - (x[i] ?? 0);
      }
      return 0;
    });
  } catch {
    return [];
  }
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** Jars of `group/artifact` in a Maven repository: the newest version matching `prefix`. */
function jar(repo: string, group: string, artifact: string, prefix = ""): string | undefined {
  const base = `${repo}/${group.replaceAll(".", "/")}/${artifact}`;
  for (const v of versionsOf(base)) {
    const path = `${base}/${v}/${artifact}-${v}.jar`;
    if (v.startsWith(prefix) && exists(path)) return path;
  }
  return undefined;
}

/** The SDK's dependencies from `~/.m2/repository`, or undefined when one is missing. */
function m2Classpath(): string | undefined {
  const repo = `${Deno.env.get("HOME")}/.m2/repository`;
  const jackson = "com.fasterxml.jackson.core";
  const version = versionsOf(`${repo}/com/fasterxml/jackson/core/jackson-databind`).find((v) =>
    ["jackson-databind", "jackson-core", "jackson-annotations"].every((a) =>
      exists(`${repo}/com/fasterxml/jackson/core/${a}/${v}/${a}-${v}.jar`)
    )
  );
  if (!version) return undefined;
  const jars = [
    ...["jackson-databind", "jackson-core", "jackson-annotations"].map((a) =>
      jar(repo, jackson, a, version)
    ),
    jar(repo, "org.apache.httpcomponents", "httpclient", "4."),
    jar(repo, "org.apache.httpcomponents", "httpcore", "4."),
    jar(repo, "commons-lang", "commons-lang", "2."),
    jar(repo, "commons-logging", "commons-logging", "1."),
    jar(repo, "commons-codec", "commons-codec", "1."),
    jar(repo, "org.slf4j", "slf4j-api", "1.7"),
  ];
  return jars.every((j) => j !== undefined) ? jars.join(":") : undefined;
}

const sdkDir = Deno.env.get("PAYMENTS_JAVA_SDK_DIR");
const sdkSrc = sdkDir ? `${sdkDir}/payments-api/src/main` : undefined;
const haveJava = onPath("javac") && onPath("java");
const classpath = Deno.env.get("PAYMENTS_JAVA_CLASSPATH") ?? (haveJava ? m2Classpath() : undefined);
const missing = !haveJava
  ? "javac/java not on PATH"
  : !sdkSrc || !exists(`${sdkSrc}/resources/payment.properties`)
  ? "PAYMENTS_JAVA_SDK_DIR (a checkout of intuit/QuickBooks-V3-Java-SDK) not set"
  : !classpath
  ? "the SDK's dependency jars (PAYMENTS_JAVA_CLASSPATH or ~/.m2/repository)"
  : undefined;
const NAME = "Java payments SDK (compiled from its source): the full flow against the defaults";
if (missing) {
  // deno-lint-ignore no-console
  console.warn(`java_sdk_real_test: skipped: ${missing}`);
  recordSkip(NAME, `opt-in (the real Java SDK): ${missing}`);
}

async function javaSources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await javaSources(path));
    else if (e.name.endsWith(".java")) out.push(path);
  }
  return out;
}

Deno.test({
  name: NAME,
  ignore: missing !== undefined,
  async fn() {
    const out = await Deno.makeTempDir({ prefix: "payments-java-sdk-" });
    const flow = new URL("./java_sdk/Flow.java", import.meta.url).pathname;
    try {
      const javac = await new Deno.Command("javac", {
        args: [
          "-nowarn",
          "-d",
          out,
          "-cp",
          classpath!,
          ...await javaSources(`${sdkSrc}/java`),
          flow,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(javac.code, 0, new TextDecoder().decode(javac.stderr));
      await Deno.copyFile(`${sdkSrc}/resources/payment.properties`, `${out}/payment.properties`);
      const srv = await spawnServer(["--port", "0", "--kv", ":memory:", "--token", "java-real"]);
      try {
        const run = await new Deno.Command("java", {
          args: ["-cp", `${out}:${classpath}`, "Flow", srv.url, "java-real"],
          stdout: "piped",
          stderr: "piped",
          signal: AbortSignal.timeout(120_000),
        }).output();
        const text = new TextDecoder().decode(run.stdout);
        assert.equal(run.code, 0, `${text}\n${new TextDecoder().decode(run.stderr)}`);
        assert.match(text, /^ALL OK$/m);
      } finally {
        await srv.stop();
      }
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
});
