/**
 * Helpers of the configuration tests: the first lines of a valid
 * configuration with one pool, and parsing that expects success or problems
 * (files are not checked).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Config } from "./schema.ts";
import { type ConfigProblem, parseConfigText } from "./load.ts";

/** Lines 1 to 7 of a valid configuration: the listener and the pool `api` up to its route. */
export const POOL_API_HEAD: readonly string[] = [
  "version: 1", // 1
  "listen:", // 2
  "  protocol: http3", // 3
  "  tls: {cert: cert.pem, key: key.pem}", // 4
  "upstream:", // 5
  "  api:", // 6
  "    route: {path_prefix: /}", // 7
];

/** The problems of `text`, which must be refused as invalid. */
export function problems(text: string): ConfigProblem[] {
  const result = parseConfigText(text, { checkFiles: false });
  assert.ok(!result.ok && result.kind === "invalid", JSON.stringify(result));
  return result.problems;
}

/** The configuration `text` stands for, which must be valid. */
export function config(text: string): Config {
  const result = parseConfigText(text, { checkFiles: false });
  assert.ok(result.ok, JSON.stringify(result));
  return result.config;
}
