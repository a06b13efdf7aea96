import type { FastifyRequest } from "fastify";
import type { Db } from "../db/client.js";
import {
  type AttemptOutcome,
  type AuthFailureLimiter,
  failureKeys,
} from "../modules/auth-failures/limiter.js";
import { type Addon, clientSecretMatches, findAddonByClientId } from "./addons.js";
import { TokenError } from "./errors.js";
import type { TokenRequest } from "./token-request.js";

const CLIENT_AUTHENTICATION_FAILED = "Client authentication failed";

/**
 * Client authentication (RFC 6749 §2.3): by secret, or a public client by id (PKCE binds the
 * code). Failures count against the address only: client ids are public, and counting per
 * client would let anyone lock an addon out.
 */
export async function authenticateClient(
  request: FastifyRequest,
  limiter: AuthFailureLimiter,
  token: TokenRequest,
): Promise<Addon> {
  const keys = [failureKeys.clientAddress(request.ip)];
  const attempt = await limiter.guard(keys, () =>
    verifyClientCredentials(request.server.db, token),
  );
  const { metrics } = request.server;
  if (attempt.limited) {
    metrics.countRateLimitRejection("auth_failures");
    throw new TokenError(
      "invalid_client",
      `Too many failed client authentications from this address; retry in ${attempt.retryAfterSeconds} seconds`,
      { retryAfterSeconds: attempt.retryAfterSeconds },
    );
  }
  if (attempt.value instanceof TokenError) {
    metrics.countAuthFailure("client_authentication");
    throw attempt.value;
  }
  return attempt.value;
}

/** A wrong guess (unknown client, wrong secret) is `failed`; a protocol slip is refused uncounted. */
async function verifyClientCredentials(
  db: Db,
  token: TokenRequest,
): Promise<AttemptOutcome<Addon | TokenError>> {
  const refuse = (failed: boolean, message: string) => ({
    failed,
    value: new TokenError("invalid_client", message, { basicChallenge: token.viaBasic }),
  });
  const client = await findAddonByClientId(db, token.clientId);
  // An unknown client and a wrong secret read the same, so a guess tells nothing about which
  // client ids exist.
  if (client === null) return refuse(true, CLIENT_AUTHENTICATION_FAILED);
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
    : refuse(true, CLIENT_AUTHENTICATION_FAILED);
}
