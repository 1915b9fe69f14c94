/**
 * Internal: checks that the TLS certificate and key files exist and hold PEM
 * blocks of the right kind. Synchronous on purpose (startup only).
 * @module
 */

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
const KEY_BLOCK = /-----BEGIN ((?:EC |RSA )?)PRIVATE KEY-----[\s\S]+?-----END \1PRIVATE KEY-----/;
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/;
/** Far larger than any certificate chain; guards against pointing at a huge file. */
const MAX_PEM_BYTES = 1024 * 1024;

/** Which TLS file is checked. */
export type PemKind = "cert" | "key";

function readProblem(path: string, error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return `file not found: ${path}`;
  if (error instanceof Deno.errors.PermissionDenied) {
    return `cannot read ${path}: permission denied`;
  }
  if (error instanceof Deno.errors.NotCapable) {
    return `cannot read ${path}: read access not granted (run with --allow-read)`;
  }
  return `cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Checks one TLS file. Returns a problem message, or `null` when the file
 * exists and holds a PEM certificate (`cert`) or an unencrypted PEM private key
 * (`key`: PKCS#8, SEC1 `EC` or PKCS#1 `RSA`).
 */
export function checkPemFile(path: string, kind: PemKind): string | null {
  let text: string;
  try {
    const info = Deno.statSync(path);
    if (info.isDirectory) return `${path} is a directory, not a file`;
    if (info.size > MAX_PEM_BYTES) return `${path} is too large to be a PEM file`;
    text = Deno.readTextFileSync(path);
  } catch (error) {
    return readProblem(path, error);
  }
  if (kind === "cert") {
    return CERT_BLOCK.test(text)
      ? null
      : `${path} is not a PEM certificate (no -----BEGIN CERTIFICATE----- block)`;
  }
  if (ENCRYPTED_KEY.test(text)) {
    return `${path} holds an encrypted private key; the proxy needs an unencrypted PEM key`;
  }
  if (KEY_BLOCK.test(text)) return null;
  return `${path} is not a PEM private key (no -----BEGIN PRIVATE KEY-----, ` +
    `-----BEGIN EC PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY----- block)`;
}
