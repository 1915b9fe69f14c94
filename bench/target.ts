/**
 * The server a benchmark client process measures, named on its command line
 * as `--port P --ca ca.pem [--host 127.0.0.1]` (the server's certificate
 * names `localhost`, signed by the CA in `ca.pem`).
 *
 * @example
 * ```ts
 * import { parseArgs } from "node:util";
 * import { readTarget, TARGET_OPTIONS } from "./target.ts";
 *
 * const { values } = parseArgs({ args: ["--port", "8443", "--ca", "ca.pem"], options: TARGET_OPTIONS });
 * const target = await readTarget(values);
 * ```
 *
 * @module
 */

/** The `parseArgs` options of the target, to spread among a client's own. */
export const TARGET_OPTIONS = {
  port: { type: "string" },
  ca: { type: "string" },
  host: { type: "string", default: "127.0.0.1" },
} as const;

/** Where the server listens, and the CA its certificate is checked against. */
export interface Target {
  host: string;
  port: number;
  /** The CA, PEM. */
  caPem: string;
}

/** The target the parsed {@link TARGET_OPTIONS} name; throws without `--port` or `--ca`. */
export async function readTarget(
  values: { port?: string; ca?: string; host?: string },
): Promise<Target> {
  if (values.port === undefined || values.ca === undefined) {
    throw new Error("--port and --ca are required");
  }
  return {
    host: values.host ?? "127.0.0.1",
    port: Number(values.port),
    caPem: await Deno.readTextFile(values.ca),
  };
}
