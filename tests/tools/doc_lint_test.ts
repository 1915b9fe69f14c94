import assert from "node:assert/strict";
import { join } from "node:path";
import { type DocFinding, isAccepted, lintEntry, parseFindings } from "./doc_lint.ts";

Deno.test("lint:docs: findings of the real deno doc are parsed, each with its rule and place", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      join(dir, "mod.ts"),
      [
        "interface Hidden { a: number }",
        "/** Documented, but returns a type nobody exports. */",
        "export function f(): Hidden { return { a: 1 }; }",
        "export function undocumented(): void {}",
        "",
      ].join("\n"),
    );
    const { ok, output } = await lintEntry(dir, "mod.ts");
    assert.equal(ok, false);
    const found = parseFindings(output, dir);
    const rules = found.map((f) => f.rule).sort();
    assert.deepEqual(rules, ["missing-jsdoc", "private-type-ref"]);
    const ref = found.find((f) => f.rule === "private-type-ref")!;
    assert.match(ref.message, /references private type 'Hidden'/);
    assert.match(ref.at, /^mod\.ts:3:\d+$/);
    assert.equal(found.some(isAccepted), false, "a repository type is never accepted");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lint:docs: only references to the listed outside types are accepted", () => {
  const finding = (rule: string, message: string): DocFinding => ({
    rule,
    message,
    at: "payments/app.ts:1:1",
    text: "",
  });
  assert.equal(
    isAccepted(
      finding("private-type-ref", "public type 'createApp' references private type 'Hono'"),
    ),
    true,
  );
  assert.equal(
    isAccepted(finding("private-type-ref", "public type 'x' references private type 'Config'")),
    false,
  );
  assert.equal(isAccepted(finding("missing-jsdoc", "exported symbol is missing JSDoc")), false);
});

Deno.test("#28.4: lint:docs: the payments wire types are ours, never accepted", () => {
  for (const type of ["Charge", "ErrorEnvelope", "Address", "PaymentsService"]) {
    const message = `public type 'x' references private type '${type}'`;
    assert.equal(
      isAccepted({ rule: "private-type-ref", message, at: "payments/mod.ts:1:1", text: "" }),
      false,
      type,
    );
  }
});
