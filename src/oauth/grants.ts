import { randomBytes } from "node:crypto";
import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { allScopes, isScope, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import {
  apiTokens,
  oauthClients,
  oauthCodes,
  oauthGrants,
  organizations,
  users,
} from "../db/schema/index.js";
import { hashSecret } from "../modules/tokens/service.js";

const CODE_PREFIX = "svca_";

export type Approval = {
  /** The addon's client record. */
  clientRecordId: string;
  /** The organisation being connected. */
  organizationId: string;
  /** The approving admin; the tokens are attributed to them. */
  userId: string;
  redirectUri: string;
  scopes: readonly Scope[];
  codeChallenge: string | null;
  codeTtlSeconds: number;
};

/**
 * Records an admin's approval: the addon's one live grant for the organisation (created, or
 * widened by the new scopes) and a single-use authorization code bound to the client, the
 * redirect URI, the scopes of this request and the PKCE challenge. Only the code's hash is kept.
 */
export async function approveAuthorization(db: Db, approval: Approval): Promise<{ code: string }> {
  const code = `${CODE_PREFIX}${randomBytes(32).toString("base64url")}`;
  await db.transaction(async (tx) => {
    const [grant] = await tx
      .insert(oauthGrants)
      .values({
        clientId: approval.clientRecordId,
        organizationId: approval.organizationId,
        scopes: [...approval.scopes],
        approvedBy: approval.userId,
      })
      .onConflictDoUpdate({
        target: [oauthGrants.clientId, oauthGrants.organizationId],
        targetWhere: isNull(oauthGrants.revokedAt),
        set: {
          scopes: sql`array(select distinct unnest(${oauthGrants.scopes} || excluded.scopes) order by 1)`,
          approvedBy: approval.userId,
        },
      })
      .returning({ id: oauthGrants.id });
    if (grant === undefined) throw new Error("grant upsert returned no row");
    await tx.insert(oauthCodes).values({
      codeHash: hashSecret(code),
      grantId: grant.id,
      clientId: approval.clientRecordId,
      userId: approval.userId,
      redirectUri: approval.redirectUri,
      scopes: [...approval.scopes],
      codeChallenge: approval.codeChallenge,
      expiresAt: sql`now() + make_interval(secs => ${approval.codeTtlSeconds})`,
    });
  });
  return { code };
}

export type ConnectedAddon = {
  id: string;
  /** The addon's public `svcc_` client id. */
  clientId: string;
  addonName: string;
  developerName: string;
  scopes: Scope[];
  approvedBy: string | null;
  createdAt: Date;
  revokedAt: Date | null;
};

function inCatalogueOrder(scopes: readonly string[]): Scope[] {
  return allScopes.filter((scope) => scopes.includes(scope) && isScope(scope));
}

/** The grants connected to an organisation (live and revoked), newest first. */
export async function listGrantsConnectedTo(
  db: Db,
  organizationId: string,
): Promise<ConnectedAddon[]> {
  const rows = await db
    .select({
      id: oauthGrants.id,
      clientId: oauthClients.clientId,
      addonName: oauthClients.name,
      developerName: organizations.name,
      scopes: oauthGrants.scopes,
      approvedBy: users.name,
      createdAt: oauthGrants.createdAt,
      revokedAt: oauthGrants.revokedAt,
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(organizations, eq(organizations.id, oauthClients.organizationId))
    .leftJoin(users, eq(users.id, oauthGrants.approvedBy))
    .where(eq(oauthGrants.organizationId, organizationId))
    .orderBy(desc(oauthGrants.createdAt), desc(oauthGrants.id));
  return rows.map((row) => ({ ...row, scopes: inCatalogueOrder(row.scopes) }));
}

/**
 * Revokes a live grant and, in the same transaction, every token it issued (the token lookup
 * also refuses tokens of a revoked grant, so nothing issued later can slip through). With
 * `organizationId`, only a grant connected to that organisation is touched.
 */
export async function revokeGrant(
  db: Db,
  grantId: string,
  organizationId?: string,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const revoked = await tx
      .update(oauthGrants)
      .set({ revokedAt: sql`now()` })
      .where(
        and(
          eq(oauthGrants.id, grantId),
          isNull(oauthGrants.revokedAt),
          organizationId === undefined ? undefined : eq(oauthGrants.organizationId, organizationId),
        ),
      )
      .returning({ id: oauthGrants.id });
    if (revoked.length === 0) return false;
    await tx
      .update(apiTokens)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(apiTokens.grantId, grantId), isNull(apiTokens.revokedAt)));
    return true;
  });
}
