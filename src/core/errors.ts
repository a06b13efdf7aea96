import { z } from "zod";

export const errorCode = z.enum([
  "invalid_token",
  "insufficient_scope",
  "not_found",
  "invalid_request",
  "rate_limited",
  "conflict",
  "unavailable",
  "internal_error",
]);
export type ErrorCode = z.infer<typeof errorCode>;

/** The one code → HTTP status table (spec, "Errors"). */
export const statusOfError: Record<ErrorCode, number> = {
  invalid_token: 401,
  insufficient_scope: 403,
  not_found: 404,
  invalid_request: 400,
  rate_limited: 429,
  conflict: 409,
  unavailable: 503,
  internal_error: 500,
};

/** An error the API answers with its envelope; anything else is a 500 with no detail. */
export class ApiError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
    this.statusCode = statusOfError[code];
  }
}

export class InvalidToken extends ApiError {
  constructor(message = "A valid bearer token is required") {
    super("invalid_token", message);
  }
}

export class InsufficientScope extends ApiError {
  constructor(readonly scope: string) {
    super("insufficient_scope", `This token lacks the ${scope} scope`);
  }
}

export class NotFound extends ApiError {
  constructor(message = "Not found") {
    super("not_found", message);
  }
}

export class InvalidRequest extends ApiError {
  constructor(message: string) {
    super("invalid_request", message);
  }
}

export class RateLimited extends ApiError {
  constructor(readonly retryAfterSeconds: number) {
    super("rate_limited", `Too many requests on this token; retry in ${retryAfterSeconds} seconds`);
  }
}

/** Another request holding the same key is still running. */
export class Conflict extends ApiError {
  constructor(message: string) {
    super("conflict", message);
  }
}

/** How long a client is asked to wait before trying again while the database cannot serve. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The database is unreachable, overloaded or too slow: the client may retry, unlike a 500. */
export class ServiceUnavailable extends ApiError {
  readonly retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS;
  constructor(
    reason = "The service cannot reach its database right now",
    /** This process is stopping: the client should come back on a new connection. */
    readonly closing = false,
  ) {
    super("unavailable", `${reason}; retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} seconds`);
  }
}
