import { createHash } from "node:crypto";
import { and, eq, gt, isNull, sql } from "drizzle-orm";
import { isScope, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { apiTokens, oauthCodes, oauthGrants } from "../db/schema/index.js";
import type { AuditContext } from "../modules/audit/service.js";
import { createToken, hashSecret } from "../modules/tokens/service.js";
import type { Addon } from "./addons.js";
import { TokenError } from "./errors.js";

export type CodeExchange = {
  /** The addon, authenticated as a client. */
  addon: Addon;
  code: string;
  redirectUri: string;
  codeVerifier: string | null;
  /** The client address of the token request, for the audit log. */
  address: string;
  /** Told when a reused code revoked the tokens issued from it. */
  onTokensRevoked: (organizationId: string) => void;
};

export type IssuedToken = { accessToken: string; scopes: Scope[] };

/** RFC 7636 §4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge. */
function verifierMatches(verifier: string, challenge: string): boolean {
  return createHash("sha256").update(verifier, "ascii").digest("base64url") === challenge;
}

/**
 * RFC 6749 §4.1.2: a code presented twice is a stolen code in someone's hands, so every
 * token issued from it is revoked.
 */
async function revokeTokensOfReusedCode(
  db: Db,
  code: { id: string; organizationId: string },
  exchange: CodeExchange,
): Promise<TokenError> {
  await db
    .update(apiTokens)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(apiTokens.oauthCodeId, code.id), isNull(apiTokens.revokedAt)));
  exchange.onTokensRevoked(code.organizationId);
  return new TokenError(
    "invalid_grant",
    "The authorization code was already used; the tokens issued from it are revoked",
  );
}

/**
 * Redeems an authorization code for an access token of the approving organisation, attributed
 * to the approving admin and holding exactly the scopes of that code.
 */
export async function exchangeAuthorizationCode(
  db: Db,
  exchange: CodeExchange,
): Promise<IssuedToken> {
  const [code] = await db
    .select({
      id: oauthCodes.id,
      clientId: oauthCodes.clientId,
      userId: oauthCodes.userId,
      redirectUri: oauthCodes.redirectUri,
      scopes: oauthCodes.scopes,
      codeChallenge: oauthCodes.codeChallenge,
      usedAt: oauthCodes.usedAt,
      expired: sql<boolean>`${oauthCodes.expiresAt} <= now()`,
      grantId: oauthGrants.id,
      organizationId: oauthGrants.organizationId,
      grantRevokedAt: oauthGrants.revokedAt,
    })
    .from(oauthCodes)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthCodes.grantId))
    .where(eq(oauthCodes.codeHash, hashSecret(exchange.code)))
    .limit(1);
  // A code issued to another client is no code at all to this one (RFC 6749 §4.1.3): the same
  // answer as an unknown code, and judged before reuse, so presenting another addon's used code
  // neither learns that it was used nor revokes the tokens that addon holds.
  if (code === undefined || code.clientId !== exchange.addon.id)
    throw new TokenError("invalid_grant", "The authorization code is unknown");
  if (code.usedAt !== null) {
    throw await revokeTokensOfReusedCode(db, code, exchange);
  }
  if (code.expired) throw new TokenError("invalid_grant", "The authorization code has expired");
  if (code.redirectUri !== exchange.redirectUri) {
    throw new TokenError(
      "invalid_grant",
      "redirect_uri differs from the one the code was issued for",
    );
  }
  if (code.codeChallenge === null) {
    // RFC 9700 §2.1.1: a verifier for a code issued without a challenge is a PKCE downgrade.
    if (exchange.codeVerifier !== null) {
      throw new TokenError(
        "invalid_grant",
        "code_verifier was sent, but the code was issued without a code_challenge",
      );
    }
  } else if (exchange.codeVerifier === null) {
    throw new TokenError("invalid_grant", "code_verifier is required for this code");
  } else if (!verifierMatches(exchange.codeVerifier, code.codeChallenge)) {
    throw new TokenError("invalid_grant", "code_verifier does not match the code_challenge");
  }
  if (code.grantRevokedAt !== null) {
    throw new TokenError("invalid_grant", "The grant behind this code was revoked");
  }

  const issued = await db.transaction(async (tx) => {
    // The claim is one conditional update: of two concurrent redemptions, the second waits
    // for the first to commit and then finds the code used.
    const claimed = await tx
      .update(oauthCodes)
      .set({ usedAt: sql`now()` })
      .where(
        and(
          eq(oauthCodes.id, code.id),
          isNull(oauthCodes.usedAt),
          gt(oauthCodes.expiresAt, sql`now()`),
        ),
      )
      .returning({ id: oauthCodes.id });
    if (claimed.length === 0) return null;
    const addonAudit: AuditContext = {
      actor: { type: "addon", id: exchange.addon.id, label: exchange.addon.name },
      address: exchange.address,
    };
    return createToken(tx, addonAudit, {
      organizationId: code.organizationId,
      userId: code.userId,
      scopes: code.scopes.filter(isScope),
      grantId: code.grantId,
      oauthCodeId: code.id,
      name: `OAuth: ${exchange.addon.name}`,
    });
  });
  if (issued === null) {
    throw await revokeTokensOfReusedCode(db, code, exchange);
  }
  return { accessToken: issued.token, scopes: issued.scopes };
}
