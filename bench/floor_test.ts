import assert from "node:assert/strict";
import { H3TestClient } from "../examples/h3_client.ts";
import { ensureDevCerts } from "../shared/certs/generate.ts";
import { SMALL_BODY } from "./backend.ts";
import { type Env, type Server, startBackend, startFloor, stop } from "./servers.ts";

const HEAD: Array<[string, string]> = [
  [":method", "GET"],
  [":scheme", "https"],
  [":authority", "localhost"],
  [":path", "/"],
];

for (
  const [label, variant] of [
    ["", {}],
    [" (fetch on a Worker)", { worker: true }],
    [" (node:http2)", { nodeHttp2: true }],
  ] as const
) {
  Deno.test(`floor${label}: answers 200 with the backend's body, many streams on one connection`, async () => {
    const tmp = await Deno.makeTempDir({ prefix: "floor-test-" });
    const certs = await ensureDevCerts(`${tmp}/certs`);
    const backend = await startBackend();
    let floor: Server | undefined;
    try {
      const env: Env = { tmp, certs, backendPort: backend.port };
      floor = await startFloor(env, { name: "floor", kind: "floor", ...variant });
      const client = await H3TestClient.connect(floor.port, await Deno.readTextFile(certs.caPath));
      try {
        const settings = await client.serverSettings; // the control stream is open
        assert.ok(settings instanceof Map);
        const answers = await Promise.all(
          Array.from({ length: 20 }, () => client.request({ head: HEAD })),
        );
        for (const r of answers) {
          assert.equal(r.status, 200);
          assert.deepEqual(r.body, SMALL_BODY);
          assert.ok(r.finished);
        }
      } finally {
        await client.close();
      }
    } finally {
      await stop(floor);
      await stop(backend);
      await Deno.remove(tmp, { recursive: true });
    }
  });
}
