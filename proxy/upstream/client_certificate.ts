/**
 * A backend's client certificate (`backends[].tls.cert` and `tls.key`, for
 * mutual TLS): the PEM pair read when the configuration is loaded,
 * checked as a pair (the key must be the certificate's), and handed to
 * every new TLS connection to that backend. A reload reads the files
 * again; a new pair has another fingerprint, so new requests go to new
 * connections, which present it, while those under way finish on theirs.
 *
 * @example
 * ```ts
 * declare const certPem: string;
 * declare const keyPem: string;
 * const checked = clientCertificate(certPem, keyPem);
 * if (checked.ok) checked.certificate.fingerprint; // "3f1c…" (16 hex digits)
 * ```
 *
 * @module
 */

import { createHash, createPrivateKey, X509Certificate } from "node:crypto";

/** A checked client certificate and key. */
export interface ClientCertificate {
  /** The certificate chain (PEM). */
  readonly cert: string;
  /** Its private key (PEM). */
  readonly key: string;
  /** A short digest of the pair: tells pairs apart in connection pool keys, never secret. */
  readonly fingerprint: string;
  /** When the (first) certificate expires, ms since the epoch. */
  readonly notAfter: number;
}

/** A pair that can be used, or why not and which file to blame. */
export type ClientCertificateCheck =
  | { ok: true; certificate: ClientCertificate }
  | { ok: false; at: "cert" | "key"; message: string };

/**
 * Checks that `key` is the private key of the first certificate of `cert`
 * (both PEM; each already known to hold a PEM block of its kind).
 */
export function clientCertificate(cert: string, key: string): ClientCertificateCheck {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(firstCertificate(cert));
  } catch (err) {
    return { ok: false, at: "cert", message: `is no X.509 certificate: ${firstLine(err)}` };
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    return { ok: false, at: "key", message: `cannot be read as a private key: ${firstLine(err)}` };
  }
  if (!x509.checkPrivateKey(privateKey)) {
    return { ok: false, at: "key", message: "does not match tls.cert" };
  }
  const fingerprint = createHash("sha256").update(cert).update("\0").update(key).digest("hex")
    .slice(0, 16);
  return {
    ok: true,
    certificate: { cert, key, fingerprint, notAfter: x509.validToDate.getTime() },
  };
}

function firstCertificate(pem: string): string {
  const end = "-----END CERTIFICATE-----";
  const at = pem.indexOf(end);
  return at < 0 ? pem : pem.slice(0, at + end.length);
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n", 1)[0];
}

/**
 * A backend's `tls` as requests and probes carry it: the configuration's
 * `ca` and `server_name`, and the client certificate loaded from its
 * `cert` and `key` (absent: none is presented).
 */
export interface BackendTlsSetting {
  /** PEM file of CAs to trust instead of the system's roots. */
  readonly ca?: string;
  /** SNI and certificate name; default the address's host. */
  readonly server_name?: string;
  /** The client certificate presented (mutual TLS). */
  readonly client_certificate?: ClientCertificate;
}
