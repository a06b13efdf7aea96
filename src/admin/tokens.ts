import { and, desc, eq, sql } from "drizzle-orm";
import { allScopes, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { apiTokens, oauthClients, oauthGrants, users } from "../db/schema/index.js";

export type OrganizationToken = {
  id: string;
  name: string | null;
  displayPrefix: string;
  scopes: Scope[];
  creator: { name: string; email: string };
  /** The addon whose grant issued the token; null for a token minted by hand. */
  addon: { name: string; grantId: string } | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
};

function selectTokens(db: Db) {
  return db
    .select({
      id: apiTokens.id,
      name: apiTokens.name,
      displayPrefix: apiTokens.displayPrefix,
      scopes: apiTokens.scopes,
      creator: { name: users.name, email: users.email },
      addonName: oauthClients.name,
      grantId: apiTokens.grantId,
      createdAt: apiTokens.createdAt,
      lastUsedAt: apiTokens.lastUsedAt,
      expiresAt: apiTokens.expiresAt,
      // A token of a revoked grant stops working with it, whatever its own row says.
      revokedAt:
        sql<Date | null>`coalesce(${apiTokens.revokedAt}, ${oauthGrants.revokedAt})`.mapWith(
          apiTokens.revokedAt,
        ),
    })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .leftJoin(oauthGrants, eq(oauthGrants.id, apiTokens.grantId))
    .leftJoin(oauthClients, eq(oauthClients.id, oauthGrants.clientId));
}

type TokenRow = Awaited<ReturnType<ReturnType<typeof selectTokens>["where"]>>[number];

function toOrganizationToken({ addonName, grantId, ...row }: TokenRow): OrganizationToken {
  return {
    ...row,
    scopes: allScopes.filter((scope) => row.scopes.includes(scope)),
    addon: grantId === null ? null : { name: addonName ?? "an addon", grantId },
  };
}

/**
 * Every token of the organisation, newest first: the ones minted by hand and the ones addons
 * were issued through their grants (told apart by `addon`).
 */
export async function listOrganizationTokens(
  db: Db,
  organizationId: string,
): Promise<OrganizationToken[]> {
  const rows = await selectTokens(db)
    .where(eq(apiTokens.organizationId, organizationId))
    .orderBy(desc(apiTokens.createdAt), desc(apiTokens.id));
  return rows.map(toOrganizationToken);
}

/** One token of the organisation, for the revoke confirmation; null when there is none. */
export async function findOrganizationToken(
  db: Db,
  organizationId: string,
  tokenId: string,
): Promise<OrganizationToken | null> {
  const [row] = await selectTokens(db).where(
    and(eq(apiTokens.id, tokenId), eq(apiTokens.organizationId, organizationId)),
  );
  return row === undefined ? null : toOrganizationToken(row);
}
