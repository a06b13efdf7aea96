import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { allScopes, type Scope } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { apiTokens, users } from "../db/schema/index.js";

export type MintedToken = {
  id: string;
  name: string | null;
  displayPrefix: string;
  scopes: Scope[];
  creator: { name: string; email: string };
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
};

/** The organisation's hand-minted tokens (OAuth-issued ones live under their grant), newest first. */
export async function listMintedTokens(db: Db, organizationId: string): Promise<MintedToken[]> {
  const rows = await db
    .select({
      id: apiTokens.id,
      name: apiTokens.name,
      displayPrefix: apiTokens.displayPrefix,
      scopes: apiTokens.scopes,
      creator: { name: users.name, email: users.email },
      createdAt: apiTokens.createdAt,
      lastUsedAt: apiTokens.lastUsedAt,
      expiresAt: apiTokens.expiresAt,
      revokedAt: apiTokens.revokedAt,
    })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(and(eq(apiTokens.organizationId, organizationId), isNull(apiTokens.grantId)))
    .orderBy(desc(apiTokens.createdAt), desc(apiTokens.id));
  return rows.map((row) => ({
    ...row,
    scopes: allScopes.filter((scope) => row.scopes.includes(scope)),
  }));
}

/** Revokes a live hand-minted token of this organisation; false when there is none. */
export async function revokeMintedToken(
  db: Db,
  organizationId: string,
  tokenId: string,
): Promise<boolean> {
  const rows = await db
    .update(apiTokens)
    .set({ revokedAt: sql`now()` })
    .where(
      and(
        eq(apiTokens.id, tokenId),
        eq(apiTokens.organizationId, organizationId),
        isNull(apiTokens.grantId),
        isNull(apiTokens.revokedAt),
      ),
    )
    .returning({ id: apiTokens.id });
  return rows.length > 0;
}
