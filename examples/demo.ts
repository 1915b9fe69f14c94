/**
 * `deno task start`: the one-command demo. Makes dev certificates if missing,
 * starts the payments API twice (ports 8081 and 8082, one embedded KV file)
 * as two backends, starts the proxy on UDP 9889 (HTTP/3) with its TCP
 * fallback on TCP 9889 (HTTP/2, HTTP/1.1) from `examples/demo.yaml`, and
 * prints the token and commands to try it (curl, gtlsclient, the project's
 * HTTP/3 client, Chromium). Ctrl-C stops everything.
 *
 * @module
 */
// deno-lint-ignore-file no-console

import { ensureDevCerts } from "../shared/certs/generate.ts";

const ROOT = new URL("../", import.meta.url).pathname;

interface Child {
  name: string;
  process: Deno.ChildProcess;
  ready: Promise<void>;
}

function spawn(
  name: string,
  args: string[],
  readyLine: RegExp,
  env: Record<string, string>,
): Child {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
    stdin: "null",
    env,
  }).spawn();
  const ready = Promise.withResolvers<void>();
  (async () => {
    let buf = "";
    for await (const chunk of process.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith("Generated bearer token")) console.log(`[${name}] ${line}`);
        if (readyLine.test(line)) ready.resolve();
      }
    }
  })();
  process.status.then((s) => ready.reject(new Error(`${name} exited with code ${s.code}`)));
  return { name, process, ready: ready.promise };
}

/**
 * The Chromium lines the demo prints: a window, and a headless run that
 * prints the page. As root Chromium refuses to start without `--no-sandbox`,
 * so it is added then (and only then: it weakens Chromium's isolation).
 */
export function chromiumCommands(base: string, spkiPin: string, root: boolean): string {
  const sandbox = root ? " --no-sandbox" : "";
  const common = `--user-data-dir=$(mktemp -d) --origin-to-force-quic-on=localhost:9889 \\
    --host-resolver-rules="MAP localhost 127.0.0.1" \\
    --ignore-certificate-errors-spki-list=${spkiPin}`;
  return `  # Chromium over HTTP/3: the API reference page${root ? " (as root: --no-sandbox)" : ""}
  chromium${sandbox} ${common} ${base}/docs

  # the same without a window: prints the page once loaded
  chromium --headless${sandbox} --disable-gpu ${common} \\
    --virtual-time-budget=5000 --dump-dom ${base}/docs`;
}

async function main(): Promise<number> {
  const certs = await ensureDevCerts(`${ROOT}.dev/certs`);
  const token = Deno.env.get("DEMO_TOKEN") ?? `demo-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.mkdir(`${ROOT}data`, { recursive: true });
  const env = { PAYMENTS_TOKENS: token };
  const children: Child[] = [];
  const stopAll = async () => {
    for (const c of children.toReversed()) {
      try {
        c.process.kill("SIGTERM");
      } catch {
        // already gone
      }
    }
    await Promise.allSettled(children.map((c) => c.process.status));
    for (const c of children) {
      const s = await c.process.status;
      console.log(`[${c.name}] exited ${s.signal ? `on ${s.signal}` : `with code ${s.code}`}`);
    }
  };
  try {
    for (const port of [8081, 8082]) {
      children.push(spawn(
        `payments:${port}`,
        ["payments/main.ts", "--port", String(port), "--kv", "data/demo.kv"],
        /^Listening on /,
        env,
      ));
    }
    await Promise.all(children.map((c) => c.ready));
    const proxy = spawn(
      "proxy",
      ["proxy/main.ts", "-c", "examples/demo.yaml"],
      /^Listening on /,
      {},
    );
    children.push(proxy);
    await proxy.ready;
  } catch (err) {
    console.error(`demo failed to start: ${(err as Error).message}`);
    await stopAll();
    return 1;
  }

  const base = "https://localhost:9889";
  const deno = denoCommand();
  console.log(`
The demo is up: HTTP/3 on UDP 9889 (and HTTP/2 or HTTP/1.1 on TCP 9889) -> spooky
-> payments on 127.0.0.1:8081 and :8082.

  Bearer token:  ${token}
  SPKI pin:      ${certs.spkiPin}

Try it (from ${ROOT}):
  # curl over the TCP fallback (HTTP/2; the answer's alt-svc points at HTTP/3)
  curl -si --cacert .dev/certs/ca.pem -H "authorization: Bearer ${token}" ${base}/vendor/v4/customers/c1/cards

  # an independent HTTP/3 client (Debian ngtcp2-client); it cannot send headers: no token -> 401
  gtlsclient --no-quic-dump --exit-on-all-streams-close 127.0.0.1 9889 ${base}/vendor/v4/customers/c1/cards
  gtlsclient --no-quic-dump --exit-on-all-streams-close 127.0.0.1 9889 ${base}/health

  # the project's own HTTP/3 client, with headers
  ${deno} run -A examples/h3_client.ts -i -H "authorization: Bearer ${token}" ${base}/vendor/v4/customers/c1/cards
  ${deno} run -A examples/h3_client.ts -i -X POST -H "authorization: Bearer ${token}" \\
    -H "content-type: application/json" \\
    -d '{"number":"4111111111111111","expMonth":12,"expYear":2030,"cvc":"123","name":"Demo"}' \\
    ${base}/vendor/v4/customers/c1/cards

${chromiumCommands(base, certs.spkiPin, Deno.uid() === 0)}

Ctrl-C stops everything.`);

  const stop = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", () => stop.resolve());
  Deno.addSignalListener("SIGTERM", () => stop.resolve());
  // If a child dies on its own, stop the rest.
  Promise.race(children.map((c) => c.process.status)).then(() => stop.resolve());
  await stop.promise;
  console.log("\nstopping...");
  await stopAll();
  return 0;
}

if (import.meta.main) Deno.exit(await main());

/**
 * How the reader runs Deno: the `npx` line the README's commands use when the
 * demo was started through `npx` (npm runs it with `npm_command=exec`; the
 * reader's own shell may have no `deno`), else `deno`.
 */
function denoCommand(): string {
  return Deno.env.get("npm_command") === "exec" ? `npx -y deno@${Deno.version.deno}` : "deno";
}
