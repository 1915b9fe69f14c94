/**
 * Request bodies as a payments API must read them: JSON only (415
 * otherwise), one object, no key given twice in one object (the last one
 * would silently win) and no number that a double cannot hold exactly
 * (`99999.989999999999` would silently become `99999.99`). Each refusal is
 * a 400 naming the field, with the rule in `moreInfo`.
 *
 * @example
 * ```ts
 * parseJsonBody('{"amount":"1.00"}'); // { amount: "1.00" }
 * parseJsonBody('{"amount":"1.00","amount":"2.00"}'); // throws 400 amount is invalid.
 * ```
 *
 * @module
 */
import { PaymentsError } from "../domain/errors.ts";

/**
 * True when a Content-Type names JSON: `application/json` or any
 * `application/…+json`, with no charset or `utf-8` (JSON is UTF-8, RFC 8259 §8.1).
 */
export function isJsonMediaType(contentType: string): boolean {
  const [essence, ...params] = contentType.toLowerCase().split(";").map((p) => p.trim());
  if (essence !== "application/json" && !/^application\/[a-z0-9.+-]+\+json$/.test(essence)) {
    return false;
  }
  return params.every((p) => !p.startsWith("charset=") || /^charset="?utf-8"?$/.test(p));
}

/** Where the scan is inside the document: an object (its keys) or an array (the index). */
interface Frame {
  keys?: Set<string>;
  key?: string;
  index: number;
}

function pathOf(frames: readonly Frame[]): string {
  return frames.map((f) => f.keys ? f.key ?? "" : String(f.index)).filter((s) => s !== "")
    .join(".") || "body";
}

/** Canonical form of a decimal literal: sign, digits without leading or trailing zeros, exponent. */
function decimalForm(literal: string): string | undefined {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(literal);
  if (!m) return undefined;
  const all = m[2] + (m[3] ?? "");
  const trimmed = all.replace(/^0+/, "");
  if (trimmed === "") return "0";
  const digits = trimmed.replace(/0+$/, "");
  const exponent = Number(m[4] ?? 0) - (m[3]?.length ?? 0) + (trimmed.length - digits.length);
  return `${m[1]}${digits}e${exponent}`;
}

/**
 * True when the JSON number `literal` denotes exactly the double it parses
 * to (compared as decimals with the shortest text that round-trips).
 */
export function exactNumber(literal: string): boolean {
  // Up to 15 significant digits always survive a double (DBL_DIG).
  if (literal.length <= 15 && !/[eE]/.test(literal)) return true;
  const value = Number(literal);
  if (!Number.isFinite(value)) return false;
  const form = decimalForm(literal);
  return form !== undefined && form === decimalForm(String(value).replace("e+", "e"));
}

/** Index just past the string token starting at `i` (a `"`). */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const ch = text.charCodeAt(j);
    if (ch === 0x5c) j++;
    else if (ch === 0x22) return j + 1;
  }
  return text.length;
}

/**
 * Walk valid JSON text and throw on a key repeated in one object or an
 * inexact number, naming the field path.
 */
function scan(text: string): void {
  const frames: Frame[] = [];
  let expectKey = false;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === "{" || ch === "[") {
      frames.push(ch === "{" ? { keys: new Set(), index: 0 } : { index: 0 });
      expectKey = ch === "{";
      i++;
    } else if (ch === "}" || ch === "]") {
      frames.pop();
      expectKey = false;
      i++;
    } else if (ch === ",") {
      const top = frames[frames.length - 1];
      if (top.keys) expectKey = true;
      else top.index++;
      i++;
    } else if (ch === ":") {
      expectKey = false;
      i++;
    } else if (ch === '"') {
      const end = stringEnd(text, i);
      const top = frames[frames.length - 1];
      if (expectKey && top?.keys) {
        const raw = text.slice(i + 1, end - 1);
        const key: string = raw.includes("\\") ? JSON.parse(text.slice(i, end)) : raw;
        top.key = key;
        if (top.keys.has(key)) {
          throw PaymentsError.invalid(
            pathOf(frames),
            undefined,
            `duplicate key: "${key}" is given more than once in one object`,
          );
        }
        top.keys.add(key);
      }
      i = end;
    } else if (ch === "-" || (ch >= "0" && ch <= "9")) {
      let j = i + 1;
      while (j < text.length && /[0-9eE+\-.]/.test(text[j])) j++;
      const literal = text.slice(i, j);
      if (!exactNumber(literal)) {
        throw PaymentsError.invalid(
          pathOf(frames),
          undefined,
          `the number ${literal} cannot be taken exactly (it would be read as ${
            Number(literal)
          }); ` +
            "amounts take at most two decimals",
        );
      }
      i = j;
    } else {
      i++;
    }
  }
}

/**
 * Parse a request body (UTF-8 text) as one JSON object. Malformed JSON or
 * another value than an object is 400 `body is invalid.`; a duplicate key or
 * an inexact number is 400 on its field.
 */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw PaymentsError.invalid("body", "Malformed JSON in request body", "a JSON object");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw PaymentsError.invalid("body", "Request body must be a JSON object", "a JSON object");
  }
  scan(text);
  return value;
}
