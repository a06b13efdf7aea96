/** Token endpoint error codes (RFC 6749 §5.2; spec, "Errors"). */
export type TokenErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unsupported_grant_type";

const statusOf: Record<TokenErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unsupported_grant_type: 400,
};

/** A token endpoint refusal, answered as an OAuth error object, never the API envelope. */
export class TokenError extends Error {
  readonly statusCode: number;
  readonly basicChallenge: boolean;
  readonly retryAfterSeconds: number | null;
  constructor(
    readonly code: TokenErrorCode,
    message: string,
    options: {
      /** The client authenticated with HTTP Basic: the 401 carries the Basic challenge. */
      basicChallenge?: boolean;
      /** Refused by the failed-authentication limit: 429 with Retry-After. */
      retryAfterSeconds?: number;
    } = {},
  ) {
    super(message);
    this.name = "TokenError";
    this.basicChallenge = options.basicChallenge ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
    this.statusCode = this.retryAfterSeconds === null ? statusOf[code] : 429;
  }
}

/** Authorization endpoint error codes sent back on the redirect (RFC 6749 §4.1.2.1). */
export type AuthorizationErrorCode =
  | "invalid_request"
  | "unsupported_response_type"
  | "invalid_scope"
  | "access_denied";
