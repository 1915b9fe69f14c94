/** Product name used in the CLI, `via` headers and probe User-Agents. */
export const PRODUCT = "spooky";

/** Version of this build (kept in step with deno.json). */
export const VERSION = "0.1.0";

/** `spooky/<version>`, the User-Agent of health probes. */
export const USER_AGENT = `${PRODUCT}/${VERSION}`;
