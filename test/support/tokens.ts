import type { FastifyInstance } from "fastify";
import type { Principal } from "../../src/core/principal.js";
import type { Db } from "../../src/db/client.js";
import { findLiveToken, hashSecret } from "../../src/modules/tokens/service.js";

/** What the database says a token is now: its principal, or null when it is not live. */
export async function livePrincipal(db: Db, token: string): Promise<Principal | null> {
  return (await findLiveToken(db, hashSecret(token)))?.principal ?? null;
}

type Injector = { inject: FastifyInstance["inject"] };

/** Redeems an authorization code at the token endpoint as a confidential client's form post. */
export function redeemCode(
  app: Injector,
  grant: { code: string; redirectUri: string; clientId: string; clientSecret: string },
) {
  return app.inject({
    method: "POST",
    url: "/api/v1/oauth/token",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams({
      grant_type: "authorization_code",
      code: grant.code,
      redirect_uri: grant.redirectUri,
      client_id: grant.clientId,
      client_secret: grant.clientSecret,
    }).toString(),
  });
}
