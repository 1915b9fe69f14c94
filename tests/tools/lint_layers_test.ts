import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { checkImport, checkText, lintLayers, type Violation } from "./lint_layers.ts";

const rules = (from: string, to: string) => checkImport({ from, to, line: 1 }).map((v) => v.rule);

Deno.test("lint:layers: proxy/h3 imports only itself; its tests may import anything", () => {
  assert.deepEqual(rules("proxy/h3/qpack/decoder.ts", "proxy/h3/errors.ts"), []);
  assert.match(rules("proxy/h3/frames.ts", "proxy/server/conn.ts")[0], /h3 imports only itself/);
  assert.match(rules("proxy/h3/frames.ts", "npm:fast-check@^4")[0], /h3 imports only itself/);
  assert.deepEqual(rules("proxy/h3/frames_test.ts", "npm:fast-check@^4"), []);
});

Deno.test("lint:layers: proxy/h2 and proxy/h3 share only proxy/hpack_common/", () => {
  assert.deepEqual(rules("proxy/h3/qpack/decoder.ts", "proxy/hpack_common/huffman.ts"), []);
  assert.deepEqual(rules("proxy/h2/hpack.ts", "proxy/hpack_common/prefix_int.ts"), []);
  assert.match(rules("proxy/h2/hpack.ts", "proxy/h3/errors.ts")[0], /h2 imports only itself/);
  assert.match(rules("proxy/h2/session.ts", "shared/bytes.ts")[0], /h2 imports only itself/);
  assert.match(
    rules("proxy/hpack_common/bytes.ts", "proxy/h3/errors.ts")[0],
    /imports only itself/,
  );
  assert.equal(checkText("proxy/h2/session.ts", "Deno.now()").length, 1);
  assert.equal(checkText("proxy/hpack_common/bytes.ts", "Deno.now()").length, 1);
});

Deno.test("lint:layers: proxy/http imports only itself; the codecs and the rest may import it", () => {
  assert.deepEqual(rules("proxy/h3/message.ts", "proxy/http/mod.ts"), []);
  assert.deepEqual(rules("proxy/h2/receive_stream.ts", "proxy/http/response.ts"), []);
  assert.deepEqual(rules("proxy/phases/respond.ts", "proxy/http/mod.ts"), []);
  assert.deepEqual(rules("proxy/http/response.ts", "proxy/http/fields.ts"), []);
  assert.match(rules("proxy/http/fields.ts", "proxy/h3/errors.ts")[0], /http imports only itself/);
  assert.match(
    rules("proxy/http/fields.ts", "proxy/hpack_common/bytes.ts")[0],
    /http imports only itself/,
  );
  assert.match(rules("proxy/http/fields.ts", "shared/bytes.ts")[0], /http imports only itself/);
  assert.match(rules("proxy/http/fields.ts", "npm:zod@^4")[0], /http imports only itself/);
  assert.deepEqual(rules("proxy/http/fields_test.ts", "proxy/h3/errors.ts"), []);
  assert.equal(checkText("proxy/http/fields.ts", "Deno.now()").length, 1);
  assert.equal(checkText("proxy/http/fields_test.ts", "Deno.now()").length, 0);
});

Deno.test("lint:layers: proxy/h1 imports only itself and proxy/http, and touches no Deno.*", () => {
  assert.deepEqual(rules("proxy/h1/response_parser.ts", "proxy/h1/lines.ts"), []);
  assert.deepEqual(rules("proxy/h1/head.ts", "proxy/http/mod.ts"), []);
  assert.match(rules("proxy/h1/head.ts", "proxy/hpack_common/bytes.ts")[0], /h1 imports only/);
  assert.match(rules("proxy/h1/head.ts", "proxy/h2/frames.ts")[0], /h1 imports only itself/);
  assert.match(rules("proxy/h1/head.ts", "shared/bytes.ts")[0], /h1 imports only itself/);
  assert.match(rules("proxy/h1/head.ts", "node:net")[0], /h1 imports only itself/);
  assert.deepEqual(rules("proxy/h1/head_test.ts", "npm:fast-check@^4"), []);
  assert.deepEqual(rules("proxy/upstream/h1_transport.ts", "proxy/h1/mod.ts"), []);
  assert.equal(checkText("proxy/h1/head.ts", "Deno.connect({ port: 80 })").length, 1);
  assert.equal(checkText("proxy/h1/head_test.ts", "Deno.connect({ port: 80 })").length, 0);
});

Deno.test("lint:layers: payments/domain imports only shared/ among the project's files", () => {
  assert.deepEqual(rules("payments/domain/money.ts", "shared/payments_schemas.ts"), []);
  assert.deepEqual(rules("payments/domain/money.ts", "node:crypto"), []);
  assert.match(rules("payments/domain/money.ts", "payments/store/kv.ts")[0], /domain imports only/);
});

Deno.test("lint:layers: shared/, proxy/ and payments/ keep to their side", () => {
  assert.match(rules("shared/bytes.ts", "proxy/h3/varint.ts")[0], /shared\/ imports neither/);
  assert.match(rules("shared/bytes.ts", "payments/app.ts")[0], /shared\/ imports neither/);
  assert.match(rules("proxy/app.ts", "payments/app.ts")[0], /do not import each other/);
  assert.match(rules("payments/app.ts", "proxy/config/mod.ts")[0], /do not import each other/);
  assert.deepEqual(rules("proxy/app.ts", "shared/bytes.ts"), []);
  assert.deepEqual(rules("tests/proxy/x_test.ts", "payments/app.ts"), []);
});

Deno.test("lint:layers: payments/store imports neither the service nor the routes", () => {
  assert.match(rules("payments/store/kv.ts", "payments/service.ts")[0], /store imports neither/);
  assert.match(rules("payments/store/kv.ts", "payments/routes/charges.ts")[0], /store imports/);
  assert.deepEqual(rules("payments/store/kv.ts", "payments/domain/money.ts"), []);
});

Deno.test("lint:layers: nothing imports a main.ts, but a test beside it", () => {
  assert.match(rules("proxy/app.ts", "proxy/main.ts")[0], /nothing imports a main\.ts/);
  assert.match(rules("tests/proxy/cli_test.ts", "proxy/main.ts")[0], /nothing imports/);
  assert.deepEqual(rules("proxy/main_test.ts", "proxy/main.ts"), []);
});

Deno.test("lint:layers: text rules: no Deno.* in h3, unstable APIs only where allowed", () => {
  assert.equal(checkText("proxy/h3/frames.ts", "const t = Deno.now;").length, 1);
  assert.equal(checkText("proxy/h3/frames.ts", "// see Deno.now").length, 0);
  const quic = "const ep = new Deno.QuicEndpoint({ port: 0 });";
  assert.equal(checkText("proxy/server/server.ts", quic).length, 1);
  assert.equal(checkText("proxy/quic/deno_transport.ts", quic).length, 0);
  assert.equal(checkText("proxy/main.ts", quic).length, 0);
  assert.equal(checkText("payments/store/kv.ts", "await Deno.openKv(p);").length, 1);
});

/** A tiny project with one violation of each rule, written as `deno fmt` writes imports. */
const FIXTURE: Record<string, string> = {
  "proxy/h3/frames.ts": `import {
  type Conn,
  open,
} from "../server/conn.ts";
export const now = () => Deno.now;
`,
  "proxy/h3/frames_test.ts": 'import assert from "node:assert/strict";\nimport "./frames.ts";\n',
  "proxy/server/conn.ts": `export type Conn = number;
export const open = () => import(
  "../../payments/service.ts"
);
`,
  "proxy/main.ts": 'import "./server/conn.ts";\n',
  "proxy/main_test.ts": 'import "./main.ts";\n',
  "proxy/quic/transport.ts": "export const ep = () => new Deno.QuicEndpoint({ port: 0 });\n",
  "payments/service.ts": 'import { money } from "./domain/money.ts";\nexport const s = money;\n',
  "payments/routes/charges.ts": "export const charges = 1;\n",
  "payments/domain/money.ts": `import type { Bytes } from "../../shared/bytes.ts";
import {
  s,
} from "../service.ts";
export const money: Bytes | typeof s = 1;
`,
  "payments/store/kv.ts": `import {
  charges,
} from "../routes/charges.ts";
import type { s } from "../service.ts";
export const kv = (p: string) => Deno.openKv(p);
`,
  "shared/bytes.ts": `import type {
  Conn,
} from "../proxy/server/conn.ts";
export type Bytes = number | Conn;
`,
  "tests/cli_test.ts": 'import "../proxy/main.ts";\n',
  "proxy/router/router.ts": 'export const r = 1;\nimport "./gone.ts";\n',
  "proxy/http/fields.ts": `import {
  now,
} from "../h3/frames.ts";
export const f = now;
`,
};

Deno.test("lint:layers: each rule catches its violation in a project, wrapped imports included", async () => {
  const root = await Deno.makeTempDir({ prefix: "lint_layers_" });
  try {
    for (const [file, text] of Object.entries(FIXTURE)) {
      await Deno.mkdir(join(root, dirname(file)), { recursive: true });
      await Deno.writeTextFile(join(root, file), text);
    }
    const found = (await lintLayers(root)).map((v: Violation) => `${v.file}:${v.line}: ${v.rule}`);
    const missing = found.findIndex((v) =>
      v.startsWith("proxy/router/router.ts:2: imports a module")
    );
    assert.ok(missing >= 0, "an import of a missing file is reported at the import");
    found.splice(missing, 1);
    assert.deepEqual(found, [
      'payments/domain/money.ts:4: payments/domain imports only shared/ (found "payments/service.ts")',
      'payments/store/kv.ts:3: payments/store imports neither the service nor the routes (found "payments/routes/charges.ts")',
      'payments/store/kv.ts:4: payments/store imports neither the service nor the routes (found "payments/service.ts")',
      "payments/store/kv.ts:5: unstable Deno API outside main.ts / proxy/quic/",
      'proxy/h3/frames.ts:4: proxy/h3 imports only itself (found "proxy/server/conn.ts")',
      "proxy/h3/frames.ts:5: proxy/h3 is sans-IO: no Deno.* API",
      'proxy/http/fields.ts:3: proxy/http imports only itself (found "proxy/h3/frames.ts")',
      'proxy/server/conn.ts:3: proxy/ and payments/ do not import each other (found "payments/service.ts")',
      'shared/bytes.ts:3: shared/ imports neither proxy/ nor payments/ (found "proxy/server/conn.ts")',
      'tests/cli_test.ts:1: nothing imports a main.ts (but a test beside it) (found "proxy/main.ts")',
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
