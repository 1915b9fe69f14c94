import assert from "node:assert/strict";
import { checkFile } from "./lint_layers.ts";

Deno.test("lint:layers: h3 may import itself only", () => {
  assert.equal(checkFile("proxy/h3/frames.ts", 'import { x } from "./varint.ts";').length, 0);
  assert.equal(
    checkFile("proxy/h3/qpack/decoder.ts", 'import { x } from "../errors.ts";').length,
    0,
  );
  const bad = checkFile("proxy/h3/frames.ts", 'import { x } from "../server/conn.ts";');
  assert.equal(bad.length, 1);
  assert.match(bad[0].rule, /imports only itself/);
  assert.equal(checkFile("proxy/h3/frames.ts", 'import fc from "fast-check";').length, 1);
  assert.equal(checkFile("proxy/h3/frames_test.ts", 'import fc from "fast-check";').length, 0);
});

Deno.test("lint:layers: h3 touches no Deno API", () => {
  assert.equal(checkFile("proxy/h3/frames.ts", "const t = Deno.now;").length, 1);
});

Deno.test("lint:layers: unstable APIs only in main.ts and proxy/quic", () => {
  const src = "const ep = new Deno.QuicEndpoint({ port: 0 });";
  assert.equal(checkFile("proxy/server/server.ts", src).length, 1);
  assert.equal(checkFile("proxy/quic/deno_transport.ts", src).length, 0);
  assert.equal(checkFile("proxy/main.ts", src).length, 0);
  assert.equal(checkFile("payments/store/kv.ts", "await Deno.openKv(p);").length, 1);
});

Deno.test("lint:layers: payments/domain imports only shared", () => {
  assert.equal(
    checkFile("payments/domain/money.ts", 'import { z } from "../../shared/x.ts";').length,
    0,
  );
  assert.equal(
    checkFile("payments/domain/money.ts", 'import { s } from "../store/kv.ts";').length,
    1,
  );
});
