/**
 * `/docs` renders in a real browser: headless Chromium loads the page, which
 * fetches /openapi.json and renders every operation; a screenshot is taken.
 */
import assert from "node:assert/strict";
import { startPaymentsServer } from "../../payments/mod.ts";
import { needs } from "../support/tools.ts";

function findChromium(): string | undefined {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Chromium's path; by name (a loud "not found") where none of the usual paths has it. */
const chromium = findChromium() ?? "chromium";

async function runChromium(dir: string, extra: string[]): Promise<Deno.CommandOutput> {
  return await new Deno.Command(chromium, {
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
      `--user-data-dir=${dir}`,
      "--window-size=1200,900",
      "--virtual-time-budget=5000",
      ...extra,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test({
  ...needs(
    "/docs renders every operation in headless Chromium; screenshot is a real PNG",
    "chromium",
  ),
  async fn() {
    const srv = await startPaymentsServer({
      port: 0,
      kv: await Deno.openKv(":memory:"),
      tokens: ["docs"],
    });
    const dir = await Deno.makeTempDir({ prefix: "payments-chromium-" });
    try {
      const url = `${srv.url}/docs`;
      const dom = await runChromium(`${dir}/a`, ["--dump-dom", url]);
      const html = new TextDecoder().decode(dom.stdout);
      for (
        const op of ["createCard", "createCharge", "voidCharge", "createECheck", "createToken"]
      ) {
        assert.ok(html.includes(`data-op="${op}"`), `${op} not rendered`);
      }
      assert.ok(html.includes("Try it"));
      // The header's markdown is rendered (code spans become <code>), and
      // the base paths (OpenAPI servers) are offered.
      assert.ok(html.includes("<code>/quickbooks/v4</code>"), "header markdown not rendered");
      assert.ok(!html.includes("`/quickbooks/v4`"), "raw markdown shown");
      assert.ok(html.includes('<option value="/vendor/v4">'), "base paths not offered");
      const shot = `${dir}/docs.png`;
      await runChromium(`${dir}/b`, [`--screenshot=${shot}`, url]);
      const png = await Deno.readFile(shot);
      assert.deepEqual([...png.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
      const view = new DataView(png.buffer, png.byteOffset);
      assert.equal(view.getUint32(16), 1200);
      assert.equal(view.getUint32(20), 900);
      assert.ok(png.length > 20_000, `screenshot only ${png.length} bytes`);
    } finally {
      await srv.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
