import { sql } from "drizzle-orm";
import { boolean, index, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { organizations, users } from "./organizations.js";

export const oauthClients = pgTable(
  "oauth_clients",
  {
    id: uuid().primaryKey().defaultRandom(),
    // The developer's organisation.
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    clientId: text().notNull().unique(),
    name: text().notNull(),
    // SHA-256 of the `svcs_` secret; null for a public (PKCE) client.
    secretHash: text(),
    isPublic: boolean().notNull().default(false),
    createdBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("oauth_clients_org_idx").on(t.organizationId)],
);

export const oauthRedirectUris = pgTable(
  "oauth_redirect_uris",
  {
    id: uuid().primaryKey().defaultRandom(),
    clientId: uuid()
      .notNull()
      .references(() => oauthClients.id, { onDelete: "cascade" }),
    uri: text().notNull(),
  },
  (t) => [uniqueIndex("oauth_redirect_uris_client_uri_idx").on(t.clientId, t.uri)],
);

export const oauthGrants = pgTable(
  "oauth_grants",
  {
    id: uuid().primaryKey().defaultRandom(),
    clientId: uuid()
      .notNull()
      .references(() => oauthClients.id, { onDelete: "cascade" }),
    // The organisation that connected the addon.
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    scopes: text().array().notNull(),
    approvedBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    // One live grant per addon and organisation; a revoked grant stays for the record.
    uniqueIndex("oauth_grants_live_idx")
      .on(t.clientId, t.organizationId)
      .where(sql`${t.revokedAt} is null`),
    index("oauth_grants_org_idx").on(t.organizationId),
  ],
);

export const oauthCodes = pgTable(
  "oauth_codes",
  {
    id: uuid().primaryKey().defaultRandom(),
    codeHash: text().notNull().unique(),
    grantId: uuid()
      .notNull()
      .references(() => oauthGrants.id, { onDelete: "cascade" }),
    clientId: uuid()
      .notNull()
      .references(() => oauthClients.id, { onDelete: "cascade" }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    redirectUri: text().notNull(),
    scopes: text().array().notNull(),
    codeChallenge: text(),
    expiresAt: timestamp({ withTimezone: true }).notNull(),
    usedAt: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("oauth_codes_grant_idx").on(t.grantId)],
);

export const apiTokens = pgTable(
  "api_tokens",
  {
    id: uuid().primaryKey().defaultRandom(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    // The creator (or, for OAuth tokens, the approving admin): every write is attributed to
    // this user while the membership lasts.
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // SHA-256 hex of the whole `svc_live_...` token; the token itself is never stored.
    tokenHash: text().notNull().unique(),
    // The first characters of the token, to recognise it in lists.
    displayPrefix: text().notNull(),
    name: text(),
    scopes: text().array().notNull(),
    expiresAt: timestamp({ withTimezone: true }),
    revokedAt: timestamp({ withTimezone: true }),
    lastUsedAt: timestamp({ withTimezone: true }),
    grantId: uuid().references(() => oauthGrants.id, { onDelete: "cascade" }),
    oauthCodeId: uuid().references(() => oauthCodes.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("api_tokens_org_idx").on(t.organizationId),
    index("api_tokens_grant_idx").on(t.grantId),
    index("api_tokens_code_idx").on(t.oauthCodeId),
  ],
);
