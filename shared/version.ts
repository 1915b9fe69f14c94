/**
 * The product's name and version. The version is `deno.json`'s, read at load
 * time (and embedded by `deno compile`), so the package, `-V` of both
 * services, `/health`, `spooky_build_info` and the payments API's OpenAPI
 * document all say the same one.
 *
 * @module
 */

import denoJson from "../deno.json" with { type: "json" };

/** Product name used in the CLI, `via` headers and probe User-Agents. */
export const PRODUCT = "spooky";

/** Version of this build: `version` in deno.json. */
export const VERSION: string = denoJson.version;

/** `spooky/<version>`, the User-Agent of health probes. */
export const USER_AGENT = `${PRODUCT}/${VERSION}`;
