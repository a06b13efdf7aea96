/** How one delivery attempt ended, as the delivery log tells it apart. */
export type DeliveryAttemptOutcome =
  | "delivered"
  | "failed_status"
  | "timeout"
  | "refused_address"
  | "network_error";

export const DELIVERY_ATTEMPT_OUTCOMES: readonly DeliveryAttemptOutcome[] = [
  "delivered",
  "failed_status",
  "timeout",
  "refused_address",
  "network_error",
];

/** What a refused authentication lacked. */
export type AuthFailureKind =
  | "missing_token"
  | "invalid_token"
  | "insufficient_scope"
  | "sign_in"
  | "client_authentication";

export const AUTH_FAILURE_KINDS: readonly AuthFailureKind[] = [
  "missing_token",
  "invalid_token",
  "insufficient_scope",
  "sign_in",
  "client_authentication",
];

/** Which limit refused a request: the API's budget, the pages', or failed authentications'. */
export type RateLimitKind = "api" | "pages" | "auth_failures";

export const RATE_LIMIT_KINDS: readonly RateLimitKind[] = ["api", "pages", "auth_failures"];

/** Whether a workspace read was answered from the read cache. */
export type ReadCacheOutcome = "hit" | "miss";

export const READ_CACHE_OUTCOMES: readonly ReadCacheOutcome[] = ["hit", "miss"];

/**
 * What the code paths that count are handed. Label values are from the closed sets above or a
 * route pattern, never an id, a token, a raw URL or an organisation.
 */
export type MetricsRecorder = {
  /** False for the recorder of a process without METRICS_PORT: nothing is worth measuring. */
  readonly enabled: boolean;
  observeRequest(method: string, route: string, statusCode: number, seconds: number): void;
  countRateLimitRejection(limit: RateLimitKind): void;
  countIdempotencyReplay(): void;
  countReadCacheAnswer(outcome: ReadCacheOutcome): void;
  countAuthFailure(kind: AuthFailureKind): void;
  countDeliveryAttempt(outcome: DeliveryAttemptOutcome): void;
  /** From the change event's commit to the receiver's 2xx. */
  observeDeliveryLag(seconds: number): void;
};

const ignore = () => {};

/** The recorder without a metrics listener: every call does nothing. */
export const NO_METRICS: MetricsRecorder = Object.freeze({
  enabled: false,
  observeRequest: ignore,
  countRateLimitRejection: ignore,
  countIdempotencyReplay: ignore,
  countReadCacheAnswer: ignore,
  countAuthFailure: ignore,
  countDeliveryAttempt: ignore,
  observeDeliveryLag: ignore,
});
