import type { components } from "./openapi.js";

/** The codes the API answers failures with (spec, "Errors"). */
export type ApiErrorCode = components["schemas"]["Failure"]["error"];

/** What a failure whose body is not the API's envelope (a proxy's 502 page, say) is called. */
const UNEXPECTED_RESPONSE = "unexpected_response";

/** A failure answered by the API: the envelope's `error` and `message`, with its HTTP context. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  /** The HTTP status. */
  readonly status: number;
  /** The envelope's code (an `ApiErrorCode`), or `unexpected_response` when there was none. */
  readonly error: string;
  /** The response's X-Request-Id, to quote when reporting a problem. */
  readonly requestId: string | null;
  /** Retry-After of a 429 or a 503, in seconds. */
  readonly retryAfterSeconds: number | null;

  constructor(fields: {
    status: number;
    error: string;
    message: string;
    requestId: string | null;
    retryAfterSeconds: number | null;
  }) {
    super(fields.message);
    this.status = fields.status;
    this.error = fields.error;
    this.requestId = fields.requestId;
    this.retryAfterSeconds = fields.retryAfterSeconds;
  }
}

/**
 * Retry-After in seconds: delay-seconds, or an HTTP date (RFC 9110, section 10.2.3); null when
 * absent or unreadable.
 */
export function retryAfterSecondsOf(headers: Headers): number | null {
  const value = headers.get("Retry-After")?.trim();
  if (value === undefined || value === "") return null;
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function isFailureEnvelope(body: unknown): body is components["schemas"]["Failure"] {
  return (
    typeof body === "object" &&
    body !== null &&
    (body as { ok?: unknown }).ok === false &&
    typeof (body as { error?: unknown }).error === "string"
  );
}

/** The ApiError of a failed response, given its body as openapi-fetch parsed it. */
export function apiErrorOf(response: Response, body: unknown): ApiError {
  const envelope = isFailureEnvelope(body) ? body : null;
  return new ApiError({
    status: response.status,
    error: envelope?.error ?? UNEXPECTED_RESPONSE,
    message:
      envelope === null
        ? `HTTP ${response.status} without the API's error envelope`
        : (envelope.message ?? envelope.error),
    requestId: response.headers.get("X-Request-Id"),
    retryAfterSeconds: retryAfterSecondsOf(response.headers),
  });
}
