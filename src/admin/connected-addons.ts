import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { allScopes, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { apiTokens, oauthClients, oauthGrants, organizations, users } from "../db/schema/index.js";

export type ConnectedAddonRow = {
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

function toConnectedAddon({ approverName, approverEmail, ...row }: GrantRow): ConnectedAddonRow {
  return {
    ...row,
    scopes: allScopes.filter((scope) => row.scopes.includes(scope)),
    approvedBy:
      approverName === null || approverEmail === null
        ? null
        : { name: approverName, email: approverEmail },
    lastUsedAt: row.lastUsedAt ?? null,
    liveTokens: row.liveTokens ?? 0,
  };
}

/** The grants other developers' addons hold on the organisation (live and revoked), newest first. */
export async function listConnectedAddons(
  db: Db,
  organizationId: string,
): Promise<ConnectedAddonRow[]> {
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
): Promise<ConnectedAddonRow | null> {
  const [row] = await selectGrants(db).where(
    and(
      eq(oauthGrants.id, grantId),
      eq(oauthGrants.organizationId, organizationId),
      isNull(oauthGrants.revokedAt),
    ),
  );
  return row === undefined ? null : toConnectedAddon(row);
}
