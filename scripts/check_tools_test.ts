import assert from "node:assert/strict";
import {
  findOnPath,
  installCommand,
  installed,
  missingMessage,
  missingTools,
  packagesOf,
} from "./check_tools.ts";
import { TOOLS } from "./tools.ts";

Deno.test("check_tools: every program once, every package a Debian name", () => {
  const programs = TOOLS.map((t) => t.program);
  assert.equal(new Set(programs).size, programs.length);
  for (const t of TOOLS) assert.match(t.debianPackage, /^[a-z0-9][a-z0-9.+-]+$/, t.program);
});

Deno.test("check_tools: packages once each, in the list's order; one install command", () => {
  const tools = TOOLS.filter((t) => ["prlimit", "setpriv", "curl"].includes(t.program));
  assert.deepEqual(packagesOf(tools), ["curl", "util-linux"]);
  assert.equal(
    installCommand(["curl", "util-linux"], false),
    "sudo apt-get update && sudo apt-get install -y --no-install-recommends curl util-linux",
  );
  assert.equal(
    installCommand(["curl"], true),
    "apt-get update && apt-get install -y --no-install-recommends curl",
  );
});

Deno.test("check_tools: the message names each program, its package, why, and the command", () => {
  const missing = missingTools(TOOLS, (p) => (p === "curl" ? "/usr/bin/curl" : undefined))
    .filter((t) => t.program === "gtlsclient" || t.program === "promtool");
  const text = missingMessage(missing, false, "not root, and sudo asks for a password");
  assert.match(text, /^ {2}gtlsclient {2}Debian package ngtcp2-client {2}\(/m);
  assert.match(text, /^ {2}promtool {4}Debian package prometheus {2}\(/m);
  assert.match(text, /Not installed here: not root, and sudo asks for a password\./);
  assert.match(
    text,
    /^ {2}sudo apt-get update && sudo apt-get install -y --no-install-recommends ngtcp2-client prometheus$/m,
  );
});

Deno.test("check_tools: PATH lookup finds executables only, and not Deno's node stand-in", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/a`);
    await Deno.mkdir(`${dir}/b`);
    await Deno.writeTextFile(`${dir}/a/tool`, "", { mode: 0o644 }); // not executable
    await Deno.writeTextFile(`${dir}/b/tool`, "#!/bin/sh\n", { mode: 0o755 });
    await Deno.symlink(Deno.execPath(), `${dir}/a/node`);
    assert.equal(findOnPath("tool", `${dir}/a::${dir}/b`), `${dir}/b/tool`);
    assert.equal(findOnPath("node", `${dir}/a`), undefined);
    assert.equal(findOnPath("absent", `${dir}/a:${dir}/b`), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("check_tools: a tool with a probe (a Python module) is installed when its probe succeeds", () => {
  const tool = (probe: string[]) => ({
    program: "x-module",
    debianPackage: "x",
    usedFor: "",
    probe,
  });
  const nowhere = () => undefined;
  assert.equal(installed(tool(["true"]), nowhere), true, "the probe, not PATH, decides");
  assert.equal(installed(tool(["false"]), nowhere), false);
  assert.equal(installed(tool(["/nonexistent/python3", "-c", "pass"]), nowhere), false);
  assert.deepEqual(missingTools([tool(["false"])], () => "/usr/bin/x").map((t) => t.program), [
    "x-module",
  ]);
});
