import type { FastifyInstance } from "fastify";
import type { Config } from "../config.js";
import { allScopes } from "../core/scopes.js";
import { registerCors } from "../http/cors.js";
import { API_PREFIX } from "../http/openapi.js";
import type { PublicClientOrigins } from "./public-client-origins.js";

/** RFC 8414 authorization server metadata, so standard clients configure themselves. */
function authorizationServerMetadata(config: Config) {
  return {
    issuer: config.publicUrl,
    authorization_endpoint: `${config.publicUrl}/oauth/authorize`,
    token_endpoint: `${config.publicUrl}${API_PREFIX}/oauth/token`,
    scopes_supported: [...allScopes],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    // RFC 9207: every authorization response carries `iss`.
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${config.publicUrl}${API_PREFIX}/docs`,
  };
}

/**
 * Registered under `/.well-known`, so that the preflight route CORS adds stays there. Browser
 * addons read the metadata as they read the token endpoint: from a public client's origin.
 */
export async function oauthMetadataRoutes(
  app: FastifyInstance,
  options: { config: Config; publicClientOrigins: PublicClientOrigins },
) {
  await registerCors(app, () => options.publicClientOrigins.allows);
  const metadata = authorizationServerMetadata(options.config);
  app.get("/oauth-authorization-server", { schema: { hide: true } }, async (_request, reply) =>
    reply.header("Cache-Control", "public, max-age=3600").send(metadata),
  );
}
