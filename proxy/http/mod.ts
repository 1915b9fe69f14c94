/**
 * HTTP semantics (RFC 9110) that hold whatever version carries a message:
 * request and response heads, field names and values, connection-specific
 * and hop-by-hop fields, trailers, bodiless responses, idempotent methods,
 * and the validation of a backend's response. Pure functions; imports
 * nothing outside `proxy/http/`. The codecs (`proxy/h3/`, `proxy/h2/`) keep
 * their wire formats and import their HTTP rules from here, as do the
 * phases, the server and the upstream transports.
 *
 * @example
 * ```ts
 * import { responseHasNoBody, validateResponseHead } from "./mod.ts";
 * responseHasNoBody("HEAD", 200); // true
 * validateResponseHead(200, [["connection", "close"]]); // "connection-specific field connection (…)"
 * ```
 *
 * @module
 */

export {
  allowedInTrailers,
  CONNECTION_SPECIFIC,
  fieldNameError,
  fieldTokens,
  fieldValueError,
  HOP_BY_HOP,
  isToken,
  mergeContentLength,
  NOT_IN_TRAILERS,
  regularFieldError,
  TCHAR,
} from "./fields.ts";
export {
  type FieldLine,
  isIdempotent,
  type RequestHead,
  responseHasNoBody,
  type ResponseHead,
  statusHasNoBody,
} from "./message.ts";
export {
  finalStatusError,
  parseResponseSection,
  responseFieldsError,
  trailerSectionError,
  validateResponseHead,
} from "./response.ts";
export {
  asksWebSocketUpgrade,
  H1_HANDSHAKE_FIELDS,
  h1UpgradeRequestError,
  isWebSocketKey,
  newWebSocketKey,
  switchError,
  WEBSOCKET_PROTOCOL,
  websocketAccept,
} from "./websocket.ts";
