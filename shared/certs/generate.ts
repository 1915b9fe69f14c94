/**
 * Development TLS certificates: a local CA and a `localhost` leaf signed by
 * it, made with WebCrypto and `@peculiar/x509` (no openssl).
 *
 * @example
 * ```ts
 * import { ensureDevCerts } from "./generate.ts";
 * const certs = await ensureDevCerts(".dev/certs");
 * const cert = await Deno.readTextFile(certs.certPath);
 * const key = await Deno.readTextFile(certs.keyPath);
 * ```
 *
 * @module
 */

// @peculiar/x509 (through tsyringe) needs the Reflect metadata API loaded first.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

const EC_KEY: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGNING: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };
const DAY_MS = 24 * 60 * 60 * 1000;

/** Leaf validity in days (kept under the 397-day limit that browsers enforce). */
export const LEAF_VALIDITY_DAYS = 365;
/** CA validity in days. */
export const CA_VALIDITY_DAYS = 3650;

/** The PEM texts and pin produced by {@link generateDevCerts}. */
export interface DevCerts {
  /** The local CA certificate (PEM). */
  caCertPem: string;
  /** The CA's private key, PKCS#8 PEM ("BEGIN PRIVATE KEY"). */
  caKeyPem: string;
  /** The leaf certificate (PEM), for localhost, 127.0.0.1 and ::1. */
  certPem: string;
  /** The leaf's private key, PKCS#8 PEM ("BEGIN PRIVATE KEY"). */
  keyPem: string;
  /** base64 SHA-256 of the leaf's SubjectPublicKeyInfo (Chromium's SPKI pin). */
  spkiPin: string;
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // positive INTEGER
  bytes[0] |= 0x01; // and no leading zero byte
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey("pkcs8", key);
  return withNewline(x509.PemConverter.encode(der, "PRIVATE KEY"));
}

function withNewline(pem: string): string {
  return pem.endsWith("\n") ? pem : pem + "\n";
}

function toBase64(bytes: ArrayBuffer): string {
  let bin = "";
  for (const b of new Uint8Array(bytes)) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * Computes the Chromium SPKI pin of a certificate: base64 of the SHA-256 of
 * its SubjectPublicKeyInfo DER (as for `--ignore-certificate-errors-spki-list`).
 *
 * @param certPem the certificate, PEM (the first certificate is used) or DER.
 */
export async function spkiPinOf(certPem: string | Uint8Array): Promise<string> {
  const cert = new x509.X509Certificate(
    typeof certPem === "string" ? firstPem(certPem) : certPem as Uint8Array<ArrayBuffer>,
  );
  return toBase64(await crypto.subtle.digest("SHA-256", cert.publicKey.rawData));
}

function firstPem(text: string): string {
  const m = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/);
  if (!m) throw new TypeError("no PEM certificate found");
  return m[0];
}

/**
 * Generates a fresh local CA (ECDSA P-256, CA:TRUE critical, keyCertSign +
 * cRLSign) and a leaf signed by it (ECDSA P-256, CA:FALSE, digitalSignature,
 * serverAuth, SAN DNS:localhost, IP:127.0.0.1, IP:::1; valid from one day
 * ago for {@link LEAF_VALIDITY_DAYS} days). Private keys are PKCS#8 PEM.
 */
export async function generateDevCerts(): Promise<DevCerts> {
  const now = Date.now();
  const notBefore = new Date(now - DAY_MS);

  const caKeys = await crypto.subtle.generateKey(EC_KEY, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: "CN=Spooky Dev CA, O=Spooky Development",
    notBefore,
    notAfter: new Date(now + CA_VALIDITY_DAYS * DAY_MS),
    keys: caKeys,
    signingAlgorithm: SIGNING,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  const leafKeys = await crypto.subtle.generateKey(EC_KEY, true, ["sign", "verify"]);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: "CN=localhost",
    issuer: ca.subject,
    notBefore,
    notAfter: new Date(now + LEAF_VALIDITY_DAYS * DAY_MS),
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: SIGNING,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "localhost" },
        { type: "ip", value: "127.0.0.1" },
        { type: "ip", value: "::1" },
      ]),
      await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  const certPem = withNewline(leaf.toString("pem"));
  return {
    caCertPem: withNewline(ca.toString("pem")),
    caKeyPem: await pkcs8Pem(caKeys.privateKey),
    certPem,
    keyPem: await pkcs8Pem(leafKeys.privateKey),
    spkiPin: await spkiPinOf(certPem),
  };
}

/** Where {@link ensureDevCerts} put the files, and whether it made them now. */
export interface DevCertFiles {
  /** The folder holding the files. */
  dir: string;
  /** `ca.pem`: the CA certificate to trust in clients. */
  caPath: string;
  /** `cert.pem`: the leaf certificate followed by the CA certificate. */
  certPath: string;
  /** `key.pem`: the leaf's PKCS#8 private key (mode 0600). */
  keyPath: string;
  /** base64 SHA-256 of the leaf's SubjectPublicKeyInfo. */
  spkiPin: string;
  /** True when new files were written, false when existing ones were reused. */
  created: boolean;
}

/** Options for {@link ensureDevCerts}. */
export interface EnsureDevCertsOptions {
  /** Regenerate even if valid files exist. */
  force?: boolean;
  /** The clock, for tests; default `Date.now`. */
  now?: () => number;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/**
 * Makes sure `dir` holds `ca.pem`, `ca-key.pem`, `cert.pem` (leaf + CA) and
 * `key.pem` (mode 0600). Existing files are reused when all are present, parse,
 * and the leaf stays valid for at least one more day; otherwise new ones are
 * generated. The pin is always computed from the leaf on disk.
 */
export async function ensureDevCerts(
  dir = ".dev/certs",
  options: EnsureDevCertsOptions = {},
): Promise<DevCertFiles> {
  const files = {
    dir,
    caPath: `${dir}/ca.pem`,
    certPath: `${dir}/cert.pem`,
    keyPath: `${dir}/key.pem`,
  };
  const caKeyPath = `${dir}/ca-key.pem`;
  const now = (options.now ?? Date.now)();

  if (!options.force) {
    const [ca, caKey, cert, key] = await Promise.all(
      [files.caPath, caKeyPath, files.certPath, files.keyPath].map(readIfExists),
    );
    if (ca && caKey && cert && key && key.includes("BEGIN PRIVATE KEY")) {
      try {
        const leaf = new x509.X509Certificate(firstPem(cert));
        if (leaf.notAfter.getTime() - now >= DAY_MS && leaf.notBefore.getTime() <= now) {
          return { ...files, spkiPin: await spkiPinOf(cert), created: false };
        }
      } catch {
        // unreadable: regenerate below
      }
    }
  }

  const certs = await generateDevCerts();
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(files.caPath, certs.caCertPem);
  await writePrivate(caKeyPath, certs.caKeyPem);
  await Deno.writeTextFile(files.certPath, certs.certPem + certs.caCertPem);
  await writePrivate(files.keyPath, certs.keyPem);
  return { ...files, spkiPin: certs.spkiPin, created: true };
}

async function writePrivate(path: string, text: string): Promise<void> {
  await Deno.writeTextFile(path, text, { mode: 0o600 });
  // `mode` only applies when the file is created; tighten an existing one too.
  await Deno.chmod(path, 0o600);
}
