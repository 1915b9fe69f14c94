/**
 * HTTP/2 error codes (RFC 9113 §7) and the error value the codec reports.
 * Nothing here is thrown past the codec: a peer's violation comes back as an
 * event carrying an {@link H2ErrorValue}.
 *
 * @module
 */

/** Error codes of RFC 9113 §7. */
export const H2Code = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

const NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(H2Code).map(([k, v]) => [v, k]),
);

/** The name of an error code (`PROTOCOL_ERROR`), or its hex for an unknown one. */
export function h2CodeName(code: number): string {
  return NAMES[code] ?? `0x${code.toString(16)}`;
}

/** A connection error or a stream error (RFC 9113 §5.4), as a value. */
export interface H2ErrorValue {
  /** The RFC 9113 §7 code. */
  readonly code: number;
  /** Human-readable reason. */
  readonly message: string;
}
