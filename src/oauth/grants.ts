import { randomBytes } from "node:crypto";
import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { allScopes, isScope, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { assertRowReturned } from "../db/returned-row.js";
import {
  apiTokens,
  oauthClients,
  oauthCodes,
  oauthGrants,
  organizations,
  users,
} from "../db/schema/index.js";
import { type AuditContext, recordAudit } from "../modules/audit/service.js";
import { hashSecret } from "../modules/tokens/service.js";

const CODE_PREFIX = "svca_";

/** The addon's name and client id, as the audit entry of a grant names them. */
async function addonNamed(tx: Db, clientRecordId: string) {
  const [addon] = await tx
    .select({ name: oauthClients.name, clientId: oauthClients.clientId })
    .from(oauthClients)
    .where(eq(oauthClients.id, clientRecordId));
  return addon;
}

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
export async function approveAuthorization(
  db: Db,
  audit: AuditContext,
  approval: Approval,
): Promise<{ code: string }> {
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
      .returning({ id: oauthGrants.id, scopes: oauthGrants.scopes });
    assertRowReturned(grant, "grant upsert");
    const addon = await addonNamed(tx, approval.clientRecordId);
    await recordAudit(tx, audit, {
      organizationId: approval.organizationId,
      action: "grant.approved",
      target: { type: "grant", id: grant.id, label: addon?.name ?? null },
      detail: {
        clientId: addon?.clientId ?? null,
        scopes: approval.scopes,
        grantScopes: grant.scopes,
      },
    });
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

function inCatalogueOrder(scopes: readonly string[]): Scope[] {
  return allScopes.filter((scope) => scopes.includes(scope) && isScope(scope));
}

export type ConnectedAddon = {
  id: string;
  /** The addon's public `svcc_` client id. */
  clientId: string;
  addonName: string;
  developerName: string;
  scopes: Scope[];
  approvedBy: { name: string; email: string } | null;
  createdAt: Date;
  revokedAt: Date | null;
  /** The latest use of any token the grant issued. */
  lastUsedAt: Date | null;
  /** Tokens of the grant that still work (not revoked, not expired). */
  liveTokens: number;
};

// Per grant, from its tokens (api_tokens_grant_idx): the latest use and how many still work.
const tokenUse = (db: Db) =>
  db
    .select({
      grantId: apiTokens.grantId,
      lastUsedAt: sql<Date | null>`max(${apiTokens.lastUsedAt})`
        .mapWith(apiTokens.lastUsedAt)
        .as("last_used_at"),
      liveTokens:
        sql<number>`count(*) filter (where ${apiTokens.revokedAt} is null and (${apiTokens.expiresAt} is null or ${apiTokens.expiresAt} > now()))`
          .mapWith(Number)
          .as("live_tokens"),
    })
    .from(apiTokens)
    .where(eq(apiTokens.grantId, oauthGrants.id))
    .groupBy(apiTokens.grantId)
    .as("token_use");

function selectGrants(db: Db) {
  const use = tokenUse(db);
  return db
    .select({
      id: oauthGrants.id,
      clientId: oauthClients.clientId,
      addonName: oauthClients.name,
      developerName: organizations.name,
      scopes: oauthGrants.scopes,
      approverName: users.name,
      approverEmail: users.email,
      createdAt: oauthGrants.createdAt,
      revokedAt: oauthGrants.revokedAt,
      lastUsedAt: use.lastUsedAt,
      liveTokens: use.liveTokens,
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId))
    .innerJoin(organizations, eq(organizations.id, oauthClients.organizationId))
    .leftJoin(users, eq(users.id, oauthGrants.approvedBy))
    .leftJoinLateral(use, sql`true`);
}

type GrantRow = Awaited<ReturnType<ReturnType<typeof selectGrants>["where"]>>[number];

function toConnectedAddon({ approverName, approverEmail, ...row }: GrantRow): ConnectedAddon {
  return {
    ...row,
    scopes: inCatalogueOrder(row.scopes),
    approvedBy:
      approverName === null || approverEmail === null
        ? null
        : { name: approverName, email: approverEmail },
    lastUsedAt: row.lastUsedAt ?? null,
    liveTokens: row.liveTokens ?? 0,
  };
}

/**
 * The grants addons hold on an organisation (live and revoked), newest first, with who approved
 * them, their tokens' latest use and how many still work.
 */
export async function listGrantsConnectedTo(
  db: Db,
  organizationId: string,
): Promise<ConnectedAddon[]> {
  const rows = await selectGrants(db)
    .where(eq(oauthGrants.organizationId, organizationId))
    .orderBy(desc(oauthGrants.createdAt), desc(oauthGrants.id));
  return rows.map(toConnectedAddon);
}

/** One live grant of the organisation, for the disconnect confirmation; null when none. */
export async function findLiveConnection(
  db: Db,
  organizationId: string,
  grantId: string,
): Promise<ConnectedAddon | null> {
  const [row] = await selectGrants(db).where(
    and(
      eq(oauthGrants.id, grantId),
      eq(oauthGrants.organizationId, organizationId),
      isNull(oauthGrants.revokedAt),
    ),
  );
  return row === undefined ? null : toConnectedAddon(row);
}

/**
 * Revokes a live grant and, in the same transaction, every token it issued (the token lookup
 * also refuses tokens of a revoked grant, so nothing issued later can slip through). With
 * `organizationId`, only a grant connected to that organisation is touched.
 */
export async function revokeGrant(
  db: Db,
  audit: AuditContext,
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
      .returning({ organizationId: oauthGrants.organizationId, clientId: oauthGrants.clientId });
    const [grant] = revoked;
    if (grant === undefined) return false;
    const tokens = await tx
      .update(apiTokens)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(apiTokens.grantId, grantId), isNull(apiTokens.revokedAt)))
      .returning({ id: apiTokens.id });
    const addon = await addonNamed(tx, grant.clientId);
    await recordAudit(tx, audit, {
      organizationId: grant.organizationId,
      action: "grant.revoked",
      target: { type: "grant", id: grantId, label: addon?.name ?? null },
      detail: { clientId: addon?.clientId ?? null, tokensRevoked: tokens.length },
    });
    return true;
  });
}
