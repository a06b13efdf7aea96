import formbody from "@fastify/formbody";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { fromDatabaseError } from "../http/error-handler.js";
import { RateLimited } from "../http/errors.js";
import { type AttemptOutcome, AuthFailureLimiter, failureKeys } from "../web/auth-failures.js";
import { clientSecretMatches, findClientByClientId, type OAuthClientRecord } from "./clients.js";
import { TokenError } from "./errors.js";
import { exchangeAuthorizationCode } from "./token-exchange.js";

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

type TokenRequest = {
  clientId: string;
  clientSecret: string | null;
  viaBasic: boolean;
  code: string;
  redirectUri: string;
  codeVerifier: string | null;
};

function readTokenRequest(request: FastifyRequest): TokenRequest {
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

/**
 * Client authentication (RFC 6749 §2.3): a confidential client by its secret (Basic or body),
 * a public client by its id alone (PKCE then binds the code). An unknown client or a wrong
 * secret counts against the address and the client id; past AUTH_RATE_LIMIT_MAX the endpoint
 * answers 429 without looking at the secret.
 */
async function authenticateClient(
  request: FastifyRequest,
  limiter: AuthFailureLimiter,
  token: TokenRequest,
): Promise<OAuthClientRecord> {
  const keys = [failureKeys.clientAddress(request.ip), failureKeys.client(token.clientId)];
  const attempt = await limiter.guard(keys, () =>
    verifyClientCredentials(request.server.db, token),
  );
  if (attempt.limited) {
    throw new TokenError(
      "invalid_client",
      `Too many failed client authentications from this address or for this client; retry in ${attempt.retryAfterSeconds} seconds`,
      { retryAfterSeconds: attempt.retryAfterSeconds },
    );
  }
  if (attempt.value instanceof TokenError) throw attempt.value;
  return attempt.value;
}

/** A wrong guess (unknown client, wrong secret) is `failed`; a protocol slip is refused uncounted. */
async function verifyClientCredentials(
  db: Db,
  token: TokenRequest,
): Promise<AttemptOutcome<OAuthClientRecord | TokenError>> {
  const refuse = (failed: boolean, message: string) => ({
    failed,
    value: new TokenError("invalid_client", message, { basicChallenge: token.viaBasic }),
  });
  const client = await findClientByClientId(db, token.clientId);
  if (client === null) return refuse(true, "Unknown client");
  if (client.isPublic) {
    return token.clientSecret === null
      ? { failed: false, value: client }
      : refuse(false, "A public client has no secret; send code_verifier");
  }
  if (token.clientSecret === null) {
    return refuse(false, "This client must authenticate with its secret");
  }
  return clientSecretMatches(client, token.clientSecret)
    ? { failed: false, value: client }
    : refuse(true, "Client authentication failed");
}

function answerTokenError(
  error: FastifyError | TokenError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  reply.header("Cache-Control", "no-store").header("Pragma", "no-cache");
  if (error instanceof TokenError) {
    if (error.basicChallenge && error.statusCode === 401) {
      reply.header("WWW-Authenticate", 'Basic realm="workspace", charset="UTF-8"');
    }
    if (error.retryAfterSeconds !== null)
      reply.header("Retry-After", String(error.retryAfterSeconds));
    return reply
      .code(error.statusCode)
      .send({ error: error.code, error_description: error.message });
  }
  if (error instanceof RateLimited) {
    return reply.code(429).send({ error: "rate_limited", error_description: error.message });
  }
  const malformed = fromDatabaseError(error);
  if (malformed !== null) {
    return reply.code(400).send({ error: "invalid_request", error_description: malformed.message });
  }
  if (error.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return reply.code(400).send({
      error: "invalid_request",
      error_description: "Content-Type must be application/x-www-form-urlencoded",
    });
  }
  if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
    request.log.info({ err: error }, "token request refused before the handler");
    return reply.code(400).send({
      error: "invalid_request",
      error_description:
        error.code === "FST_ERR_CTP_BODY_TOO_LARGE"
          ? "The body is too large"
          : "The request could not be read",
    });
  }
  request.log.error({ err: error }, "unhandled error at the token endpoint");
  return reply
    .code(500)
    .send({ error: "server_error", error_description: "Internal server error" });
}

/**
 * `POST /api/v1/oauth/token` in a scope of its own: form bodies are parsed here only (the JSON
 * API keeps refusing them), and errors are OAuth error objects (RFC 6749 §5.2), not the
 * API envelope. It is not an API operation, so it stays out of the OpenAPI document.
 */
export async function oauthTokenRoutes(app: FastifyInstance, options: { config: Config }) {
  app.removeContentTypeParser("application/json");
  await app.register(formbody);
  app.setErrorHandler(answerTokenError);
  const limiter = new AuthFailureLimiter(app.db, options.config.authRateLimitMax);

  app.post(
    "/oauth/token",
    { config: { access: "public" }, schema: { hide: true } },
    async (request, reply) => {
      reply.header("Cache-Control", "no-store").header("Pragma", "no-cache");
      const token = readTokenRequest(request);
      const client = await authenticateClient(request, limiter, token);
      const issued = await exchangeAuthorizationCode(app.db, {
        client,
        code: token.code,
        redirectUri: token.redirectUri,
        codeVerifier: token.codeVerifier,
      });
      return reply.send({
        access_token: issued.accessToken,
        token_type: "Bearer",
        scope: issued.scopes.join(" "),
      });
    },
  );
}
