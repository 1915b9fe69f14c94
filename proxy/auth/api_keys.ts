/**
 * API keys of a pool's `auth.api_keys`: the `keys_file` parsed (one key per
 * line) and kept only as SHA-256 digests, and a request's key checked
 * against them. The key is hashed, the digest looked up, and the digest
 * found compared with the request's in constant time: the time a check
 * takes says nothing about how close a guess came, and no key is held in
 * the clear after loading.
 *
 * File format: one key per line; surrounding whitespace is trimmed, empty
 * lines and lines starting with `#` are skipped. A key is 16 to 4096
 * visible ASCII characters (what a field value carries unchanged).
 *
 * @example
 * ```ts
 * const parsed = parseApiKeys("# team a\nk3y-0123456789abcdef\n");
 * if (parsed.ok) parsed.keys.matches("k3y-0123456789abcdef"); // true
 * ```
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";

/** Shortest key accepted: a shorter one is too easy to guess. */
export const MIN_API_KEY_LENGTH = 16;
/** Longest key accepted. */
export const MAX_API_KEY_LENGTH = 4096;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** The keys of one `keys_file`, as digests. */
export class ApiKeySet {
  readonly #digests: ReadonlyMap<string, Uint8Array>;

  /** A set of the keys whose SHA-256 digests are `digests` (base64url → bytes). */
  constructor(digests: ReadonlyMap<string, Uint8Array>) {
    this.#digests = digests;
  }

  /** How many keys the set holds. */
  get size(): number {
    return this.#digests.size;
  }

  /** Whether `key` is one of the set's keys. */
  matches(key: string): boolean {
    const digest = sha256(key);
    const found = this.#digests.get(digest.toString("base64url"));
    return found !== undefined && timingSafeEqual(found, digest);
  }
}

/** A parsed keys file, or the first problem with its line (1-based). */
export type ApiKeysParse =
  | { ok: true; keys: ApiKeySet }
  | { ok: false; line?: number; message: string };

/** Parses the text of a `keys_file` (see the module documentation). */
export function parseApiKeys(text: string): ApiKeysParse {
  const digests = new Map<string, Uint8Array>();
  const firstLine = new Map<string, number>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const key = lines[i].trim();
    if (key === "" || key.startsWith("#")) continue;
    const why = keyProblem(key);
    if (why !== null) return { ok: false, line: i + 1, message: why };
    const digest = sha256(key);
    const id = digest.toString("base64url");
    const twin = firstLine.get(id);
    if (twin !== undefined) {
      return { ok: false, line: i + 1, message: `repeats the key of line ${twin}` };
    }
    firstLine.set(id, i + 1);
    digests.set(id, digest);
  }
  if (digests.size === 0) return { ok: false, message: "holds no key" };
  return { ok: true, keys: new ApiKeySet(digests) };
}

/** Why `key` (trimmed, never echoed) cannot be an API key, or null. */
function keyProblem(key: string): string | null {
  if (!VISIBLE_ASCII.test(key)) {
    return "a key may hold only visible ASCII characters (no spaces or control characters)";
  }
  if (key.length < MIN_API_KEY_LENGTH) {
    return `the key is shorter than ${MIN_API_KEY_LENGTH} characters (too easy to guess)`;
  }
  if (key.length > MAX_API_KEY_LENGTH) {
    return `the key is longer than ${MAX_API_KEY_LENGTH} characters`;
  }
  return null;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
