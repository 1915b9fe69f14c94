/**
 * What the files a configuration names hold, read and checked when it is
 * loaded (startup, `--check`, every reload), beside the {@link Config}
 * that names them: the API keys and JWKS of each pool's `auth`, the
 * `admin.tokens`, and the backends' client certificates. A reload reads
 * them all again, so keys rotate without a restart; a file that cannot be
 * used rejects the reload, and the previous keys keep serving.
 *
 * Nothing here is ever logged: keys and tokens are kept only as digests,
 * and no part of these values is written anywhere.
 *
 * @example
 * ```ts
 * import { loadConfig } from "./load.ts";
 * const loaded = await loadConfig("proxy.yaml");
 * if (loaded.ok) (loaded.secrets ?? NO_SECRETS).apiKeys.get("api")?.size;
 * ```
 *
 * @module
 */

import type { AdminToken } from "../admin/roles.ts";
import type { ApiKeySet } from "../auth/api_keys.ts";
import type { JwtKeys } from "../auth/jwks.ts";
import type { ClientCertificate } from "../upstream/client_certificate.ts";

/** The loaded contents of a configuration's key, token and certificate files. */
export interface ConfigSecrets {
  /** Each pool's `auth.api_keys.keys_file`, by pool name. */
  readonly apiKeys: ReadonlyMap<string, ApiKeySet>;
  /** Each pool's `auth.jwt.jwks_file`, by pool name. */
  readonly jwtKeys: ReadonlyMap<string, JwtKeys>;
  /** The tokens of `admin.tokens` (`admin.token` is in the configuration itself). */
  readonly adminTokens: readonly AdminToken[];
  /** Each backend's `tls.cert` and `tls.key`, by backend id. */
  readonly clientCertificates: ReadonlyMap<string, ClientCertificate>;
}

/** No files read: a configuration that names none. */
export const NO_SECRETS: ConfigSecrets = Object.freeze({
  apiKeys: new Map(),
  jwtKeys: new Map(),
  adminTokens: [],
  clientCertificates: new Map(),
});
