import type { FastifyRequest } from "fastify";
import { TokenError } from "./errors.js";

const TOKEN_PARAMETERS = [
  "grant_type",
  "code",
  "redirect_uri",
  "client_id",
  "client_secret",
  "code_verifier",
] as const;
type TokenParameter = (typeof TOKEN_PARAMETERS)[number];
type TokenParameters = Partial<Record<TokenParameter, string>>;

// RFC 7636 §4.1: 43 to 128 unreserved characters.
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** The form body's parameters; a repeated one is refused (RFC 6749 §3.2). */
function readBody(body: unknown): TokenParameters {
  if (body === null || typeof body !== "object") {
    throw new TokenError(
      "invalid_request",
      "The body must be form-encoded (application/x-www-form-urlencoded)",
    );
  }
  const fields = body as Record<string, unknown>;
  const parameters: TokenParameters = {};
  for (const [name, value] of Object.entries(fields)) {
    if (Array.isArray(value)) throw new TokenError("invalid_request", `${name} is repeated`);
    if (
      (TOKEN_PARAMETERS as readonly string[]).includes(name) &&
      typeof value === "string" &&
      value !== ""
    ) {
      parameters[name as TokenParameter] = value;
    }
  }
  return parameters;
}

type BasicCredentials = { clientId: string; clientSecret: string };

/** Form-decoding of one half of the Basic credentials (RFC 6749 §2.3.1). */
function formDecode(value: string): string {
  return decodeURIComponent(value.replaceAll("+", " "));
}

/** HTTP Basic client credentials, or null when the request has no Authorization header. */
function readBasicCredentials(request: FastifyRequest): BasicCredentials | null {
  const header = request.headers.authorization;
  if (header === undefined || header === "") return null;
  const refuse = () =>
    new TokenError(
      "invalid_client",
      "The Authorization header is not valid Basic client credentials",
      {
        basicChallenge: true,
      },
    );
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header.trim());
  if (match?.[1] === undefined) throw refuse();
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) throw refuse();
  try {
    return {
      clientId: formDecode(decoded.slice(0, colon)),
      clientSecret: formDecode(decoded.slice(colon + 1)),
    };
  } catch {
    throw refuse();
  }
}

export type TokenRequest = {
  clientId: string;
  clientSecret: string | null;
  viaBasic: boolean;
  code: string;
  redirectUri: string;
  codeVerifier: string | null;
};

/** The token request as the route needs it, or a TokenError saying what is wrong with it. */
export function readTokenRequest(request: FastifyRequest): TokenRequest {
  const query = request.query as Record<string, unknown>;
  if (Object.hasOwn(query, "client_secret")) {
    throw new TokenError("invalid_request", "client_secret must never be sent in the query string");
  }
  const body = readBody(request.body);
  if (body.grant_type === undefined)
    throw new TokenError("invalid_request", "grant_type is missing");
  if (body.grant_type !== "authorization_code") {
    throw new TokenError(
      "unsupported_grant_type",
      "Only grant_type=authorization_code is supported",
    );
  }
  const basic = readBasicCredentials(request);
  if (basic !== null && body.client_secret !== undefined) {
    throw new TokenError(
      "invalid_request",
      "Client credentials were sent both by HTTP Basic and in the body; use one method",
    );
  }
  if (basic !== null && body.client_id !== undefined && body.client_id !== basic.clientId) {
    throw new TokenError(
      "invalid_request",
      "client_id in the body differs from the Basic credentials",
    );
  }
  const clientId = basic?.clientId ?? body.client_id;
  if (clientId === undefined || clientId === "")
    throw new TokenError("invalid_request", "client_id is missing");
  if (body.code === undefined) throw new TokenError("invalid_request", "code is missing");
  if (body.redirect_uri === undefined)
    throw new TokenError("invalid_request", "redirect_uri is missing");
  if (body.code_verifier !== undefined && !CODE_VERIFIER.test(body.code_verifier)) {
    throw new TokenError(
      "invalid_request",
      "code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_' and '~'",
    );
  }
  return {
    clientId,
    clientSecret: basic?.clientSecret ?? body.client_secret ?? null,
    viaBasic: basic !== null,
    code: body.code,
    redirectUri: body.redirect_uri,
    codeVerifier: body.code_verifier ?? null,
  };
}
