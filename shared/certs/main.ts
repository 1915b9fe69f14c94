/**
 * `deno task certs`: makes (or reuses) the development CA and `localhost`
 * certificate and prints where they are and the Chromium SPKI pin.
 *
 * ```sh
 * deno task certs                 # .dev/certs, reuse while valid
 * deno task certs --dir /tmp/c --force
 * ```
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ensureDevCerts } from "./generate.ts";

const USAGE = `Usage: deno task certs [--dir <folder>] [--force]

Creates a local development CA and a certificate for localhost, 127.0.0.1 and
::1 signed by it, or reuses the existing ones while they stay valid.

Options:
  --dir <folder>  where to write ca.pem, ca-key.pem, cert.pem, key.pem
                  (default: .dev/certs)
  --force         generate new files even if valid ones exist
  -h, --help      show this help`;

/**
 * Runs the CLI with `args` and prints through `print`.
 *
 * @returns the process exit code (0 on success, 2 on a usage error).
 */
export async function main(
  args: string[],
  // deno-lint-ignore no-console
  print: (line: string) => void = (line) => console.log(line),
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        dir: { type: "string", default: ".dev/certs" },
        force: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    print(`error: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    print(USAGE);
    return 0;
  }
  const certs = await ensureDevCerts(values.dir, { force: values.force });
  print(
    certs.created
      ? `Created dev certificates in ${certs.dir}`
      : `Reusing dev certificates in ${certs.dir}`,
  );
  print(`  CA certificate:   ${certs.caPath}`);
  print(`  certificate:      ${certs.certPath}  (localhost, 127.0.0.1, ::1; leaf + CA)`);
  print(`  private key:      ${certs.keyPath}`);
  print(`SPKI pin (sha256/base64): ${certs.spkiPin}`);
  print(`Chromium flag: --ignore-certificate-errors-spki-list=${certs.spkiPin}`);
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
