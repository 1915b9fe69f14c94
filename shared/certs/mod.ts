/**
 * Development TLS certificates: a local CA and a `localhost` leaf signed by
 * it, written once to a folder and reused; `deno task certs` runs `main.ts`.
 *
 * @example
 * ```ts
 * import { ensureDevCerts } from "./mod.ts";
 *
 * const certs = await ensureDevCerts(".dev/certs");
 * const cert = await Deno.readTextFile(certs.certPath);
 * ```
 *
 * @module
 */

export {
  CA_VALIDITY_DAYS,
  type DevCertFiles,
  type DevCerts,
  ensureDevCerts,
  type EnsureDevCertsOptions,
  generateDevCerts,
  LEAF_VALIDITY_DAYS,
  spkiPinOf,
} from "./generate.ts";
