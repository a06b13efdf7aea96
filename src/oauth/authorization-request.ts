import { allScopes, isScope, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { type Addon, findAddonByClientId } from "./addons.js";
import type { AuthorizationErrorCode } from "./errors.js";

/** The parameters of `GET /oauth/authorize` (and of the consent form that repeats them). */
const PARAMETERS = [
  "client_id",
  "redirect_uri",
  "response_type",
  "scope",
  "state",
  "code_challenge",
  "code_challenge_method",
] as const;
type Parameter = (typeof PARAMETERS)[number];

const MAX_STATE_LENGTH = 2000;
// RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is always 43 characters.
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export type AuthorizationRequest = {
  addon: Addon;
  redirectUri: string;
  scopes: Scope[];
  state: string;
  codeChallenge: string | null;
};

export type AuthorizationCheck =
  | { outcome: "valid"; request: AuthorizationRequest }
  /** The client or redirect URI cannot be trusted: tell the member, never redirect. */
  | { outcome: "show-error"; message: string }
  /** The client and redirect URI are fine: the error goes back to the client. */
  | {
      outcome: "redirect-error";
      redirectUri: string;
      error: AuthorizationErrorCode;
      description: string;
      state: string | null;
    };

type Values = Partial<Record<Parameter, string>>;

/**
 * One value per parameter (RFC 6749 §3.1: none may appear twice). Empty values count as absent.
 */
function readParameters(input: unknown): { values: Values; repeated: Parameter[] } {
  const source = (input ?? {}) as Record<string, unknown>;
  const values: Values = {};
  const repeated: Parameter[] = [];
  for (const name of PARAMETERS) {
    const raw = source[name];
    if (Array.isArray(raw)) {
      repeated.push(name);
    } else if (typeof raw === "string" && raw !== "") {
      values[name] = raw;
    }
  }
  return { values, repeated };
}

function parseScopes(value: string): { scopes: Scope[]; unknown: string[] } {
  const requested = value.split(" ").filter((entry) => entry !== "");
  const unknown = requested.filter((entry) => !isScope(entry));
  return { scopes: allScopes.filter((scope) => requested.includes(scope)), unknown };
}

/**
 * Checks an authorization request in the order RFC 6749 §4.1.2.1 requires: first what decides
 * whether we may redirect at all (the client and the exact redirect URI), then everything
 * else, whose errors go back to the client with the same `state`.
 */
export async function checkAuthorizationRequest(
  db: Db,
  input: unknown,
): Promise<AuthorizationCheck> {
  const { values, repeated } = readParameters(input);
  if (repeated.includes("client_id") || repeated.includes("redirect_uri")) {
    return { outcome: "show-error", message: "The request repeats client_id or redirect_uri." };
  }
  if (values.client_id === undefined) {
    return { outcome: "show-error", message: "The request names no addon (client_id is missing)." };
  }
  const client = await findAddonByClientId(db, values.client_id);
  if (client === null) {
    return { outcome: "show-error", message: "The addon that sent you here is not registered." };
  }
  const redirectUri = values.redirect_uri;
  if (redirectUri === undefined) {
    return { outcome: "show-error", message: "The request has no redirect_uri." };
  }
  // Exact string comparison, never a prefix (RFC 9700 §4.1.3).
  if (!client.redirectUris.includes(redirectUri)) {
    return {
      outcome: "show-error",
      message: "The redirect address in the request is not one the addon registered.",
    };
  }

  const state = repeated.includes("state") ? null : (values.state ?? null);
  const refuse = (error: AuthorizationErrorCode, description: string): AuthorizationCheck => ({
    outcome: "redirect-error",
    redirectUri,
    error,
    description,
    state,
  });
  if (repeated.length > 0) return refuse("invalid_request", `${repeated[0]} is repeated`);
  // The rule: anything but response_type=code, absent included, is unsupported.
  if (values.response_type !== "code") {
    return refuse("unsupported_response_type", "only response_type=code is supported");
  }
  if (values.scope === undefined) return refuse("invalid_scope", "scope is missing");
  const { scopes, unknown } = parseScopes(values.scope);
  if (unknown.length > 0) return refuse("invalid_scope", `unknown scope ${unknown.join(" ")}`);
  if (scopes.length === 0) return refuse("invalid_scope", "scope names no scope");
  if (state === null) return refuse("invalid_request", "state is missing");
  if (state.length > MAX_STATE_LENGTH) {
    return refuse("invalid_request", `state is longer than ${MAX_STATE_LENGTH} characters`);
  }

  const challenge = values.code_challenge ?? null;
  const method = values.code_challenge_method ?? null;
  if (challenge === null && method !== null) {
    return refuse("invalid_request", "code_challenge_method without code_challenge");
  }
  if (challenge !== null) {
    // A challenge without a method means "plain" (RFC 7636 §4.3), which we refuse like an explicit one.
    if (method !== "S256") {
      return refuse(
        "invalid_request",
        "code_challenge_method must be S256 (plain is not supported)",
      );
    }
    if (!S256_CHALLENGE.test(challenge)) {
      return refuse("invalid_request", "code_challenge must be 43 base64url characters");
    }
  } else if (client.isPublic) {
    return refuse(
      "invalid_request",
      "a public client must send code_challenge with code_challenge_method=S256",
    );
  }
  return {
    outcome: "valid",
    request: { addon: client, redirectUri, scopes, state, codeChallenge: challenge },
  };
}

/** The request as the consent form repeats it in hidden fields (checked again on submit). */
export function authorizationParameters(request: AuthorizationRequest): Record<string, string> {
  return {
    client_id: request.addon.clientId,
    redirect_uri: request.redirectUri,
    response_type: "code",
    scope: request.scopes.join(" "),
    state: request.state,
    ...(request.codeChallenge === null
      ? {}
      : { code_challenge: request.codeChallenge, code_challenge_method: "S256" }),
  };
}

/**
 * Where the member goes back to the addon: `params` are added to the registered URI's own
 * query, which is kept byte for byte (it was matched exactly and has no fragment).
 */
export function clientRedirectUrl(
  redirectUri: string,
  params: Record<string, string | null | undefined>,
): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined) query.append(name, value);
  }
  const separator = !redirectUri.includes("?")
    ? "?"
    : redirectUri.endsWith("?") || redirectUri.endsWith("&")
      ? ""
      : "&";
  return `${redirectUri}${separator}${query.toString()}`;
}
