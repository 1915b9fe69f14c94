/**
 * Internal: reads and checks the key, token and certificate files a valid
 * configuration names ({@link ConfigSecrets}), off the event loop, regular
 * files only, each under a size bound. Every problem is reported at the
 * key naming the file (its line is the key's), with the file's own line
 * when it has one: `upstream.api.auth.api_keys.keys_file (line 12):
 * /etc/spooky/keys.txt line 3: a key may hold only visible ASCII
 * characters`. No problem quotes a key or a token.
 *
 * @module
 */

import { parseAdminToken, tokenDigest } from "../admin/roles.ts";
import type { AdminToken } from "../admin/roles.ts";
import { type ApiKeySet, parseApiKeys } from "../auth/api_keys.ts";
import { type JwtKeys, parseJwks } from "../auth/jwks.ts";
import { type ClientCertificate, clientCertificate } from "../upstream/client_certificate.ts";
import { readBoundedFile, readPemFile } from "./_files.ts";
import type { KeyPath } from "./_yaml_lines.ts";
import { tokenFileId } from "./schema.ts";
import type { ConfigSecrets } from "./secrets.ts";
import type { Config } from "./types.ts";

/** Largest keys file or JWKS file read. */
export const MAX_KEYS_FILE_BYTES = 4 * 1024 * 1024;
/** Largest admin token file read. */
const MAX_TOKEN_FILE_BYTES = 64 * 1024;

/** Where the reader reports. */
export interface SecretProblems {
  /** A problem at a key path (rejects the configuration). */
  add(path: KeyPath, message: string): void;
  /** A warning at a key path (the configuration still loads). */
  warn(path: KeyPath, message: string): void;
}

/**
 * Reads every file of `config` (paths already resolved) that holds keys,
 * tokens or a client certificate. `now` dates the certificate warnings.
 */
export async function readConfigSecrets(
  config: Config,
  report: SecretProblems,
  now: number,
): Promise<ConfigSecrets> {
  const [apiKeys, jwtKeys, adminTokens, clientCertificates] = await Promise.all([
    readApiKeys(config, report),
    readJwtKeys(config, report),
    readAdminTokens(config, report),
    readClientCertificates(config, report, now),
  ]);
  return { apiKeys, jwtKeys, adminTokens, clientCertificates };
}

async function readApiKeys(
  config: Config,
  report: SecretProblems,
): Promise<Map<string, ApiKeySet>> {
  const out = new Map<string, ApiKeySet>();
  await Promise.all(
    Object.entries(config.upstream).map(async ([pool, u]) => {
      const file = u.auth?.api_keys?.keys_file;
      if (file === undefined) return;
      const at: KeyPath = ["upstream", pool, "auth", "api_keys", "keys_file"];
      const read = await readBoundedFile(file, MAX_KEYS_FILE_BYTES);
      if (!read.ok) {
        report.add(at, read.problem);
        return;
      }
      const parsed = parseApiKeys(read.text);
      if (parsed.ok) out.set(pool, parsed.keys);
      else report.add(at, `${file}${parsed.line ? ` line ${parsed.line}` : ""}: ${parsed.message}`);
    }),
  );
  return out;
}

async function readJwtKeys(
  config: Config,
  report: SecretProblems,
): Promise<Map<string, JwtKeys>> {
  const out = new Map<string, JwtKeys>();
  await Promise.all(
    Object.entries(config.upstream).map(async ([pool, u]) => {
      const jwt = u.auth?.jwt;
      if (jwt === undefined) return;
      const at: KeyPath = ["upstream", pool, "auth", "jwt", "jwks_file"];
      const read = await readBoundedFile(jwt.jwks_file, MAX_KEYS_FILE_BYTES);
      if (!read.ok) {
        report.add(at, read.problem);
        return;
      }
      const parsed = await parseJwks(read.text, jwt.algorithms);
      if (parsed.ok) out.set(pool, parsed.keys);
      else report.add(at, `${jwt.jwks_file} ${parsed.message}`);
    }),
  );
  return out;
}

async function readAdminTokens(config: Config, report: SecretProblems): Promise<AdminToken[]> {
  const entries = config.admin?.tokens ?? [];
  const read = await Promise.all(entries.map(async (entry, index) => {
    const at: KeyPath = ["admin", "tokens", index, "token_file"];
    const text = await readBoundedFile(entry.token_file, MAX_TOKEN_FILE_BYTES);
    if (!text.ok) {
      report.add(at, text.problem);
      return null;
    }
    const parsed = parseAdminToken(text.text);
    if (!parsed.ok) {
      report.add(at, `${entry.token_file} ${parsed.message}`);
      return null;
    }
    const token: AdminToken = {
      id: tokenFileId(entry.token_file),
      role: entry.role,
      digest: parsed.digest,
    };
    return token;
  }));
  const tokens = read.filter((t) => t !== null);
  checkDistinct(config, tokens, report);
  return tokens;
}

/** Two entries with one token would give it two roles: refused, naming the second. */
function checkDistinct(config: Config, tokens: readonly AdminToken[], report: SecretProblems) {
  const seen = new Map<string, string>();
  const legacy = config.admin?.token;
  if (legacy !== undefined) seen.set(digestText(tokenDigest(legacy)), "admin.token");
  for (const t of tokens) {
    const key = digestText(t.digest);
    const first = seen.get(key);
    const index = config.admin!.tokens.findIndex((e) => tokenFileId(e.token_file) === t.id);
    if (first !== undefined) {
      report.add(
        ["admin", "tokens", index, "token_file"],
        `holds the same token as ${first}: each token has one role`,
      );
    } else seen.set(key, t.id);
  }
}

async function readClientCertificates(
  config: Config,
  report: SecretProblems,
  now: number,
): Promise<Map<string, ClientCertificate>> {
  const out = new Map<string, ClientCertificate>();
  const jobs: Promise<void>[] = [];
  for (const [pool, u] of Object.entries(config.upstream)) {
    u.backends.forEach((b, index) => {
      const tls = b.tls;
      if (tls?.cert === undefined || tls.key === undefined) return;
      const at = (kind: "cert" | "key"): KeyPath => [
        "upstream",
        pool,
        "backends",
        index,
        "tls",
        kind,
      ];
      jobs.push((async () => {
        const [cert, key] = await Promise.all([
          readPemFile(tls.cert!, "cert"),
          readPemFile(tls.key!, "key"),
        ]);
        if (!cert.ok) report.add(at("cert"), cert.problem);
        if (!key.ok) report.add(at("key"), key.problem);
        if (!cert.ok || !key.ok) return;
        const pair = clientCertificate(cert.text, key.text);
        if (!pair.ok) {
          report.add(at(pair.at), pair.message);
          return;
        }
        out.set(b.id, pair.certificate);
        const expiry = expiryWarning(pair.certificate.notAfter, now);
        if (expiry !== null) report.warn(at("cert"), expiry);
      })());
    });
  }
  await Promise.all(jobs);
  return out;
}

/** A warning when a client certificate has expired at `now`. */
function expiryWarning(notAfter: number, now: number): string | null {
  return notAfter < now
    ? `the client certificate expired on ${new Date(notAfter).toISOString()}; ` +
      "the backend will refuse it until it is renewed"
    : null;
}

function digestText(digest: Uint8Array): string {
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}
