/**
 * Internal: turns zod issues into short, human messages.
 * @module
 */
import type { z } from "zod";

const EXPECTED: Record<string, string> = {
  object: "a mapping",
  record: "a mapping",
  map: "a mapping",
  array: "a list",
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
};

/** Describes a YAML value in a few words: `the string "abc"`, `empty`, `a list`. */
export function describeValue(value: unknown): string {
  if (value === null) return "empty";
  if (Array.isArray(value)) return "a list";
  switch (typeof value) {
    case "string": {
      const shown = value.length > 40 ? `${value.slice(0, 40)}...` : value;
      return `the string ${JSON.stringify(shown)}`;
    }
    case "number":
    case "boolean":
    case "bigint":
      return `${typeof value} ${String(value)}`;
    case "object":
      return value instanceof Uint8Array ? "binary data" : "a mapping";
    default:
      return typeof value;
  }
}

/**
 * The message for one zod issue (issues must come from a parse with
 * `reportInput: true`, so that a missing key can be told from a wrong value).
 */
export function issueMessage(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  if (issue.code === "invalid_type") {
    if (input === undefined) return "is required";
    if (issue.expected === "never") return issue.message;
    const expected = EXPECTED[issue.expected] ?? issue.expected;
    return `must be ${expected}, not ${describeValue(input)}`;
  }
  if (issue.code === "invalid_value" && input === undefined) return "is required";
  return issue.message;
}
