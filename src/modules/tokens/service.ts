import { hash, randomBytes } from "node:crypto";
import { and, eq, isNull, lte, sql } from "drizzle-orm";
import type { Principal } from "../../core/principal.js";
import { isScope, type Scope } from "../../core/scopes.js";
import type { Db } from "../../db/client.js";
import { assertRowReturned } from "../../db/returned-row.js";
import { apiTokens, memberships, oauthGrants, organizations } from "../../db/schema/index.js";
import { type AuditContext, recordAudit } from "../audit/service.js";

const TOKEN_PREFIX = "svc_live_";
// 32 random bytes in base64url.
const TOKEN_PATTERN = /^svc_live_[A-Za-z0-9_-]{43}$/;

export function hashSecret(value: string): string {
  // The one-shot form: no Hash object per request, about a third of the time for a token.
  return hash("sha256", value, "hex");
}

function generateToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
}

export type NewToken = {
  organizationId: string;
  userId: string;
  scopes: Scope[];
  expiresAt?: Date | null;
  name?: string | null;
  grantId?: string | null;
  oauthCodeId?: string | null;
};

/** The name a token goes by in the audit log: its name, or its display prefix. */
function tokenLabel(row: { name: string | null; displayPrefix: string }): string {
  return row.name ?? row.displayPrefix;
}

/** Stores only the hash; the returned `token` is the one time the secret is visible. */
export async function createToken(db: Db, audit: AuditContext, input: NewToken) {
  const token = generateToken();
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(apiTokens)
      .values({
        organizationId: input.organizationId,
        userId: input.userId,
        tokenHash: hashSecret(token),
        displayPrefix: token.slice(0, TOKEN_PREFIX.length + 6),
        name: input.name ?? null,
        scopes: input.scopes,
        expiresAt: input.expiresAt ?? null,
        grantId: input.grantId ?? null,
        oauthCodeId: input.oauthCodeId ?? null,
      })
      .returning({
        id: apiTokens.id,
        scopes: apiTokens.scopes,
        expiresAt: apiTokens.expiresAt,
        name: apiTokens.name,
        displayPrefix: apiTokens.displayPrefix,
      });
    assertRowReturned(row, "token insert");
    await recordAudit(tx, audit, {
      organizationId: input.organizationId,
      action: "token.minted",
      target: { type: "token", id: row.id, label: tokenLabel(row) },
      detail: { scopes: row.scopes, expiresAt: row.expiresAt?.toISOString() ?? null },
    });
    return { id: row.id, token, scopes: row.scopes as Scope[], expiresAt: row.expiresAt };
  });
}

/**
 * Revokes a live token; false when unknown or already revoked. With `organizationId`, only a
 * token of that organisation; with `handMintedOnly`, never one an addon's grant issued.
 */
export async function revokeToken(
  db: Db,
  audit: AuditContext,
  input: { tokenId: string; organizationId?: string; handMintedOnly?: boolean },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [revoked] = await tx
      .update(apiTokens)
      .set({ revokedAt: sql`now()` })
      .where(
        and(
          eq(apiTokens.id, input.tokenId),
          isNull(apiTokens.revokedAt),
          input.organizationId === undefined
            ? undefined
            : eq(apiTokens.organizationId, input.organizationId),
          input.handMintedOnly ? isNull(apiTokens.grantId) : undefined,
        ),
      )
      .returning({
        id: apiTokens.id,
        organizationId: apiTokens.organizationId,
        name: apiTokens.name,
        displayPrefix: apiTokens.displayPrefix,
      });
    if (revoked === undefined) return false;
    await recordAudit(tx, audit, {
      organizationId: revoked.organizationId,
      action: "token.revoked",
      target: { type: "token", id: revoked.id, label: tokenLabel(revoked) },
    });
    return true;
  });
}

/** A live token as the database has it: its principal, its expiry and its last use. */
export type LiveToken = { principal: Principal; expiresAt: Date | null; lastUsedAt: Date | null };

/**
 * One query: the live token of this hash with its organisation, author membership and grant;
 * null when it is unknown, revoked, expired or of a revoked grant.
 */
export async function findLiveToken(db: Db, tokenHash: string): Promise<LiveToken | null> {
  const [row] = await db
    .select({
      tokenId: apiTokens.id,
      scopes: apiTokens.scopes,
      expiresAt: apiTokens.expiresAt,
      lastUsedAt: apiTokens.lastUsedAt,
      organization: { id: organizations.id, slug: organizations.slug, name: organizations.name },
      authorId: memberships.userId,
      pluginId: oauthGrants.clientId,
    })
    .from(apiTokens)
    .innerJoin(organizations, eq(organizations.id, apiTokens.organizationId))
    .leftJoin(
      memberships,
      and(
        eq(memberships.organizationId, apiTokens.organizationId),
        eq(memberships.userId, apiTokens.userId),
        isNull(memberships.removedAt),
        lte(memberships.activeSince, apiTokens.createdAt),
      ),
    )
    .leftJoin(oauthGrants, eq(oauthGrants.id, apiTokens.grantId))
    .where(
      and(
        eq(apiTokens.tokenHash, tokenHash),
        isNull(apiTokens.revokedAt),
        sql`(${apiTokens.expiresAt} is null or ${apiTokens.expiresAt} > now())`,
        sql`(${apiTokens.grantId} is null or ${oauthGrants.revokedAt} is null)`,
      ),
    )
    .limit(1);
  if (row === undefined) return null;
  return {
    principal: {
      tokenId: row.tokenId,
      organization: row.organization,
      scopes: row.scopes.filter(isScope),
      authorId: row.authorId,
      pluginId: row.pluginId,
    },
    expiresAt: row.expiresAt,
    lastUsedAt: row.lastUsedAt,
  };
}

/** The token hash of a presented token, or null when it cannot be one of ours. */
export function tokenHashOf(token: string): string | null {
  return TOKEN_PATTERN.test(token) ? hashSecret(token) : null;
}

export async function recordTokenUse(db: Db, tokenId: string): Promise<void> {
  await db.update(apiTokens).set({ lastUsedAt: sql`now()` }).where(eq(apiTokens.id, tokenId));
}
