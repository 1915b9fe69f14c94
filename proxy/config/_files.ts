/**
 * Internal: reads the files a configuration names (the configuration file
 * itself, the TLS certificate and key) safely, and checks that the TLS files
 * hold PEM blocks of the right kind.
 *
 * Only regular files are read, and never more than a bound: a device such as
 * `/dev/zero` would otherwise be read without end, and a FIFO would block the
 * reader until someone writes to it. Files are opened non-blocking and checked
 * on the open handle (`fstat`), so a path swapped for a FIFO between a check
 * and the read cannot block either. The asynchronous readers run the file
 * system calls off the event loop (reload); the synchronous ones are for
 * startup and tests.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
const KEY_BLOCK = /-----BEGIN ((?:EC |RSA )?)PRIVATE KEY-----[\s\S]+?-----END \1PRIVATE KEY-----/;
const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/;
/** Far larger than any certificate chain; guards against pointing at a huge file. */
export const MAX_PEM_BYTES = 1024 * 1024;
/** Far larger than any sensible configuration file. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/** Open flags: read only, and never wait on a FIFO or device when opening. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** Which TLS file is checked. */
export type PemKind = "cert" | "key";

/** A file's text, or why it cannot be read (a sentence naming the path). */
export type FileText = { ok: true; text: string } | { ok: false; problem: string };

/** Words for a file that is not a regular file, from its `fstat`. */
function fileKind(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO (named pipe)";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isSocket()) return "a socket";
  return "not a regular file";
}

/** The problem with a file that is not a regular file, or too large; `null` when fine. */
function shapeProblem(path: string, st: Stats, maxBytes: number): string | null {
  if (st.isDirectory()) return `${path} is a directory, not a file`;
  if (!st.isFile()) return `${path} is ${fileKind(st)}, not a regular file`;
  if (st.size > maxBytes) return `${path} is too large (over ${maxBytes} bytes)`;
  return null;
}

/** Describes an error of opening or reading `path` in one sentence. */
export function readProblem(path: string, error: unknown): string {
  const code = (error as { code?: string } | null)?.code;
  if (error instanceof Deno.errors.NotFound || code === "ENOENT") return `file not found: ${path}`;
  if (error instanceof Deno.errors.PermissionDenied || code === "EACCES" || code === "EPERM") {
    return `cannot read ${path}: permission denied`;
  }
  if (error instanceof Deno.errors.NotCapable) {
    return `cannot read ${path}: read access not granted (run with --allow-read)`;
  }
  if (error instanceof Deno.errors.IsADirectory || code === "EISDIR") {
    return `${path} is a directory, not a file`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return `cannot read ${path}: ${message.split("\n", 1)[0]}`;
}

/**
 * A read buffer sized from the file's `fstat` size that grows (doubling) as
 * long as the file does, up to `maxBytes + 1` bytes: one byte past the bound
 * is enough to tell a file over it.
 */
class BoundedBuffer {
  bytes: Uint8Array;
  used = 0;
  readonly #cap: number;

  constructor(size: number, maxBytes: number) {
    this.#cap = maxBytes + 1;
    this.bytes = new Uint8Array(Math.min(Math.max(size + 1, 4096), this.#cap));
  }

  /** Free bytes left in {@link bytes}. */
  room(): number {
    return this.bytes.length - this.used;
  }

  /** Counts `n` bytes read; false once the bound is reached (stop reading). */
  advance(n: number): boolean {
    this.used += n;
    if (this.used < this.bytes.length) return true;
    if (this.bytes.length >= this.#cap) return false;
    const bigger = new Uint8Array(Math.min(this.bytes.length * 2, this.#cap));
    bigger.set(this.bytes);
    this.bytes = bigger;
    return true;
  }

  /** The bytes read so far. */
  filled(): Uint8Array {
    return this.bytes.subarray(0, this.used);
  }
}

function decode(bytes: Uint8Array, path: string, maxBytes: number): FileText {
  if (bytes.length > maxBytes) {
    return { ok: false, problem: `${path} is too large (over ${maxBytes} bytes)` };
  }
  return { ok: true, text: new TextDecoder().decode(bytes) };
}

/**
 * Reads a regular file of at most `maxBytes` bytes as UTF-8 text, with the
 * file system calls off the event loop. Never blocks on a FIFO or device and
 * never reads more than `maxBytes + 1` bytes (a file that grows while it is
 * read is still bounded).
 */
export async function readBoundedFile(path: string, maxBytes: number): Promise<FileText> {
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (error) {
    return { ok: false, problem: readProblem(path, error) };
  }
  try {
    const st = await handle.stat();
    const problem = shapeProblem(path, st, maxBytes);
    if (problem !== null) return { ok: false, problem };
    const buf = new BoundedBuffer(st.size, maxBytes);
    for (;;) {
      const { bytesRead } = await handle.read(buf.bytes, buf.used, buf.room(), buf.used);
      if (bytesRead === 0 || !buf.advance(bytesRead)) break;
    }
    return decode(buf.filled(), path, maxBytes);
  } catch (error) {
    return { ok: false, problem: readProblem(path, error) };
  } finally {
    await handle.close().catch(() => {});
  }
}

/** The synchronous form of {@link readBoundedFile}, for startup and tests. */
export function readBoundedFileSync(path: string, maxBytes: number): FileText {
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS);
  } catch (error) {
    return { ok: false, problem: readProblem(path, error) };
  }
  try {
    const st = fstatSync(fd);
    const problem = shapeProblem(path, st, maxBytes);
    if (problem !== null) return { ok: false, problem };
    const buf = new BoundedBuffer(st.size, maxBytes);
    for (;;) {
      const n = readSync(fd, buf.bytes, buf.used, buf.room(), buf.used);
      if (n === 0 || !buf.advance(n)) break;
    }
    return decode(buf.filled(), path, maxBytes);
  } catch (error) {
    return { ok: false, problem: readProblem(path, error) };
  } finally {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}

/**
 * Checks the text of one TLS file. Returns a problem message, or `null` when
 * it holds a PEM certificate (`cert`) or an unencrypted PEM private key
 * (`key`: PKCS#8, SEC1 `EC` or PKCS#1 `RSA`).
 */
export function pemProblem(path: string, kind: PemKind, text: string): string | null {
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

/** Reads and checks one TLS file (synchronous; startup and tests). */
export function readPemFileSync(path: string, kind: PemKind): FileText {
  const read = readBoundedFileSync(path, MAX_PEM_BYTES);
  if (!read.ok) return read;
  const problem = pemProblem(path, kind, read.text);
  return problem === null ? read : { ok: false, problem };
}

/** Reads and checks one TLS file, off the event loop. */
export async function readPemFile(path: string, kind: PemKind): Promise<FileText> {
  const read = await readBoundedFile(path, MAX_PEM_BYTES);
  if (!read.ok) return read;
  const problem = pemProblem(path, kind, read.text);
  return problem === null ? read : { ok: false, problem };
}

/**
 * The validity period of the first certificate of a PEM text, or `null` when
 * it cannot be parsed as X.509 (the listener's own check then reports it).
 */
export function certificateValidity(pem: string): { notBefore: Date; notAfter: Date } | null {
  const block = CERT_BLOCK.exec(pem);
  if (block === null) return null;
  try {
    const cert = new X509Certificate(block[0]);
    return { notBefore: cert.validFromDate, notAfter: cert.validToDate };
  } catch {
    return null;
  }
}
