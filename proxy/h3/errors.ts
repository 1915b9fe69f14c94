/**
 * HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6) and the one typed
 * error the codec throws for protocol violations.
 *
 * @module
 */

/** Error codes of RFC 9114 §8.1 and RFC 9204 §6. */
export const H3Code = {
  NO_ERROR: 0x100,
  GENERAL_PROTOCOL_ERROR: 0x101,
  INTERNAL_ERROR: 0x102,
  STREAM_CREATION_ERROR: 0x103,
  CLOSED_CRITICAL_STREAM: 0x104,
  FRAME_UNEXPECTED: 0x105,
  FRAME_ERROR: 0x106,
  EXCESSIVE_LOAD: 0x107,
  ID_ERROR: 0x108,
  SETTINGS_ERROR: 0x109,
  MISSING_SETTINGS: 0x10a,
  REQUEST_REJECTED: 0x10b,
  REQUEST_CANCELLED: 0x10c,
  REQUEST_INCOMPLETE: 0x10d,
  MESSAGE_ERROR: 0x10e,
  CONNECT_ERROR: 0x10f,
  VERSION_FALLBACK: 0x110,
  QPACK_DECOMPRESSION_FAILED: 0x200,
  QPACK_ENCODER_STREAM_ERROR: 0x201,
  QPACK_DECODER_STREAM_ERROR: 0x202,
} as const;

/** One of the {@link H3Code} values. */
export type H3CodeValue = typeof H3Code[keyof typeof H3Code];

/** Whether an error aborts one request stream or the whole connection. */
export type H3ErrorScope = "stream" | "connection";

const NAMES = new Map<number, string>(
  Object.entries(H3Code).map(([name, code]) => [code, name]),
);

/** The symbolic name of an error code, e.g. `H3_FRAME_ERROR` or `QPACK_DECOMPRESSION_FAILED`. */
export function h3CodeName(code: number): string {
  const name = NAMES.get(code);
  if (name === undefined) return `0x${code.toString(16)}`;
  return name.startsWith("QPACK_") ? name : `H3_${name}`;
}

/**
 * A protocol violation found by the codec. `scope` tells the caller whether to
 * reset the stream or close the connection with `code`.
 *
 * @example
 * ```ts
 * throw new H3Error(H3Code.FRAME_ERROR, "connection", "truncated SETTINGS frame");
 * ```
 */
export class H3Error extends Error {
  /** The RFC 9114 / RFC 9204 error code to send. */
  readonly code: number;
  /** Stream error or connection error. */
  readonly scope: H3ErrorScope;

  /**
   * Creates the error.
   *
   * @param code the RFC 9114 / RFC 9204 error code.
   * @param scope whether the stream or the whole connection fails.
   * @param message what went wrong; the code's name is put in front.
   */
  constructor(code: number, scope: H3ErrorScope, message: string) {
    super(`${h3CodeName(code)}: ${message}`);
    this.name = "H3Error";
    this.code = code;
    this.scope = scope;
  }
}

/** A malformed request or response (RFC 9114 §4.1.2): a stream error with H3_MESSAGE_ERROR. */
export class MalformedMessageError extends H3Error {
  /** The field or rule that failed, e.g. `:path` or `content-length`. */
  readonly field: string;

  /**
   * Creates a stream error with H3_MESSAGE_ERROR.
   *
   * @param field the field or rule that failed.
   * @param message what is wrong with it.
   */
  constructor(field: string, message: string) {
    super(H3Code.MESSAGE_ERROR, "stream", message);
    this.name = "MalformedMessageError";
    this.field = field;
  }
}

/** Value returned by incremental decoders when the input ends before a complete item. */
export const NEED_MORE: unique symbol = Symbol("need more bytes");
/** Type of {@link NEED_MORE}. */
export type NeedMore = typeof NEED_MORE;
