/**
 * The one structured error type of the payments package and the helpers that
 * build the wire error envelope.
 *
 * @module
 */
import type { ErrorEnvelope } from "../../shared/payments_wire.ts";

/**
 * Where error codes are documented (returned as `infoLink`) unless the
 * server is given another (`--info-link`).
 */
export const INFO_LINK = "https://developer.vendor.example/docs/payments/errors";

/** Broad kind of a payments error. */
export type PaymentsErrorKind =
  | "invalid"
  | "required"
  | "not_found"
  | "unauthorized"
  | "too_large"
  | "timeout"
  | "declined"
  | "system"
  | "conflict"
  | "unsupported_media_type"
  | "rate_limited";

/** One item of the envelope. */
export interface ErrorDetail {
  /** `PMT-xxxx` code. */
  code: string;
  /** Error type such as `invalid_request`. */
  type: string;
  /** Human readable message, e.g. `"amount is invalid."`. */
  message: string;
  /** The field path or a longer explanation. */
  detail: string;
  /** The rule that failed, when one did (e.g. `at most two decimals`). */
  moreInfo?: string;
}

/**
 * A failure that maps to an HTTP status and the `{"errors":[...]}` envelope.
 *
 * @example
 * ```ts
 * throw PaymentsError.invalid("card.number");
 * ```
 */
export class PaymentsError extends Error {
  /** Kind of failure. */
  readonly kind: PaymentsErrorKind;
  /** HTTP status to answer with. */
  readonly status: number;
  /** Whether retrying the same request may succeed. */
  readonly retryable: boolean;
  /** Envelope items (at least one). */
  readonly details: ErrorDetail[];
  /** Extra response headers (e.g. the generated `Request-Id` of a create whose outcome is unknown). */
  headers?: Record<string, string>;

  /** Build an error from its parts. */
  constructor(
    kind: PaymentsErrorKind,
    status: number,
    details: ErrorDetail[],
    options?: { retryable?: boolean; cause?: unknown },
  ) {
    super(details[0]?.message ?? kind, { cause: options?.cause });
    this.name = "PaymentsError";
    this.kind = kind;
    this.status = status;
    this.details = details;
    this.retryable = options?.retryable ?? false;
  }

  /** The wire envelope of this error, pointing at `infoLink` (default {@link INFO_LINK}). */
  toEnvelope(infoLink: string = INFO_LINK): ErrorEnvelope {
    return { errors: this.details.map((d) => ({ ...d, infoLink })) };
  }

  /**
   * 400 PMT-4000 `"<field> is invalid."` with the field path in `detail`
   * and the rule that failed in `moreInfo`.
   */
  static invalid(path: string, detail?: string, moreInfo?: string): PaymentsError {
    return new PaymentsError("invalid", 400, [invalidItem(path, detail, moreInfo)]);
  }

  /** 400 PMT-4002 `"<field> is required."`. */
  static required(path: string): PaymentsError {
    return new PaymentsError("required", 400, [requiredItem(path)]);
  }

  /**
   * 404 PMT-4000 for an unknown resource or path; `moreInfo` says what was
   * looked for (default: no stored resource has that id).
   */
  static notFound(path: string, detail?: string, moreInfo?: string): PaymentsError {
    return new PaymentsError("not_found", 404, [{
      code: "PMT-4000",
      type: "invalid_request",
      message: `${leaf(path)} is invalid.`,
      detail: detail ?? `${path} not found`,
      moreInfo: moreInfo ?? `no stored resource has this ${leaf(path)}`,
    }]);
  }

  /** 400 PMT-4000 for an operation the resource's state forbids. */
  static conflict(path: string, detail: string, moreInfo?: string): PaymentsError {
    return new PaymentsError("conflict", 400, [invalidItem(path, detail, moreInfo)]);
  }

  /** 401 PMT-4010 for a missing or wrong bearer token. */
  static unauthorized(): PaymentsError {
    return new PaymentsError("unauthorized", 401, [{
      code: "PMT-4010",
      type: "unauthorized",
      message: "Authorization is invalid.",
      detail: "Send Authorization: Bearer <token>",
      moreInfo:
        "a bearer token the server accepts (--token, PAYMENTS_TOKENS, or the one it printed)",
    }]);
  }

  /** 413 PMT-4013 for a body over the limit. */
  static tooLarge(limit: number): PaymentsError {
    return new PaymentsError("too_large", 413, [{
      code: "PMT-4013",
      type: "invalid_request",
      message: "body is invalid.",
      detail: `Request body exceeds ${limit} bytes`,
    }]);
  }

  /** 408 PMT-4008 for a request body that did not arrive in time. */
  static bodyTimeout(ms: number): PaymentsError {
    return new PaymentsError("timeout", 408, [{
      code: "PMT-4008",
      type: "invalid_request",
      message: "body is invalid.",
      detail: `Request body not received within ${ms} ms`,
    }]);
  }

  /** 415 PMT-4015 for a request body that is not JSON. */
  static unsupportedMediaType(contentType: string): PaymentsError {
    return new PaymentsError("unsupported_media_type", 415, [{
      code: "PMT-4015",
      type: "invalid_request",
      message: "contentType is invalid.",
      detail: `Content-Type ${contentType} is not JSON`,
      moreInfo: "request bodies are JSON (UTF-8): send Content-Type: application/json",
    }]);
  }

  /** 429 PMT-4029 with `Retry-After` for a client over a rate limit. */
  static rateLimited(retryAfterS: number, moreInfo: string): PaymentsError {
    const err = new PaymentsError("rate_limited", 429, [{
      code: "PMT-4029",
      type: "rate_limited",
      message: "Too many requests.",
      detail: `Rate limit reached; retry after ${retryAfterS} s`,
      moreInfo,
    }], { retryable: true });
    err.headers = { "Retry-After": String(retryAfterS) };
    return err;
  }

  /** 402 PMT-5000 for an operation on a declined charge. */
  static declined(detail: string): PaymentsError {
    return new PaymentsError("declined", 402, [{
      code: "PMT-5000",
      type: "card_declined",
      message: "The card was declined.",
      detail,
    }]);
  }

  /** 502/503 PMT-6000 system error. */
  static system(detail: string, status = 502, retryable = true): PaymentsError {
    return new PaymentsError("system", status, [{
      code: "PMT-6000",
      type: "system_error",
      message: "A system error occurred.",
      detail,
    }], { retryable });
  }
}

/** Last segment of a dotted path (`card.number` → `number`). */
export function leaf(path: string): string {
  const i = path.lastIndexOf(".");
  return i < 0 ? path : path.slice(i + 1);
}

/** Envelope item for an invalid field, with the rule that failed when known. */
export function invalidItem(path: string, detail?: string, moreInfo?: string): ErrorDetail {
  return {
    code: "PMT-4000",
    type: "invalid_request",
    message: `${leaf(path)} is invalid.`,
    detail: detail ?? path,
    ...(moreInfo ? { moreInfo } : {}),
  };
}

/** Envelope item for a missing field. */
export function requiredItem(path: string): ErrorDetail {
  return {
    code: "PMT-4002",
    type: "invalid_request",
    message: `${leaf(path)} is required.`,
    detail: path,
    moreInfo: "a required field is missing",
  };
}
