import { sql } from "drizzle-orm";
import { index, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";

export const memberRole = pgEnum("member_role", ["admin", "member"]);

export const organizations = pgTable("organizations", {
  id: uuid().primaryKey().defaultRandom(),
  slug: text().notNull().unique(),
  name: text().notNull(),
  createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
});

export const users = pgTable(
  "users",
  {
    id: uuid().primaryKey().defaultRandom(),
    email: text().notNull(),
    name: text().notNull(),
    // Argon2id hash; null for users who never sign in to the browser (API-only members).
    passwordHash: text(),
    // Where the member last signed in (an IPv6 address by its /64): sign-ins from there skip
    // the per-account caps, so strangers guessing elsewhere cannot lock the member out.
    lastSignInAddress: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("users_email_lower_idx").on(sql`lower(${t.email})`)],
);

export const memberships = pgTable(
  "memberships",
  {
    id: uuid().primaryKey().defaultRandom(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: memberRole().notNull(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    // Start of the current, unbroken membership: a token minted before a removal stays
    // read-only even if the member is added back (spec: "a new token must be minted").
    activeSince: timestamp({ withTimezone: true }).notNull().defaultNow(),
    // A removed membership is kept so that authorship history still resolves; only an
    // active membership (removedAt null) makes a user an author or an approver.
    removedAt: timestamp({ withTimezone: true }),
  },
  (t) => [
    uniqueIndex("memberships_org_user_idx").on(t.organizationId, t.userId),
    index("memberships_user_idx").on(t.userId),
  ],
);
