import formbody from "@fastify/formbody";
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.js";
import { AuthFailureLimiter } from "../modules/auth-failures/limiter.js";
import { authenticateClient } from "./client-authentication.js";
import { answerTokenError } from "./token-error-handler.js";
import { exchangeAuthorizationCode } from "./token-exchange.js";
import { readTokenRequest } from "./token-request.js";

/** Where the token endpoint answers, under the API's prefix. */
export const TOKEN_ENDPOINT_PATH = "/oauth/token";

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
    TOKEN_ENDPOINT_PATH,
    { config: { access: "public" }, schema: { hide: true } },
    async (request, reply) => {
      reply.header("Cache-Control", "no-store").header("Pragma", "no-cache");
      const token = readTokenRequest(request);
      const addon = await authenticateClient(request, limiter, token);
      const issued = await exchangeAuthorizationCode(app.db, {
        addon,
        code: token.code,
        redirectUri: token.redirectUri,
        codeVerifier: token.codeVerifier,
        address: request.ip,
        onTokensRevoked: (organizationId) => app.principals.forgetOrganization(organizationId),
      });
      return reply.send({
        access_token: issued.accessToken,
        token_type: "Bearer",
        scope: issued.scopes.join(" "),
      });
    },
  );
}
