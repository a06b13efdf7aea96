import { boolean, index, jsonb, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

/** Browser sessions of members (admin area, OAuth consent); the cookie carries only the id. */
export const sessions = pgTable(
  "sessions",
  {
    id: text().primaryKey(),
    data: jsonb().$type<Record<string, unknown>>().notNull(),
    expiresAt: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [index("sessions_expires_idx").on(t.expiresAt)],
);

/**
 * Failed sign-ins and client authentications per address and account (AUTH_RATE_LIMIT_MAX). A
 * row is `unsettled` while its attempt runs, so parallel attempts see it; a success deletes it.
 */
export const authFailures = pgTable(
  "auth_failures",
  {
    id: uuid().primaryKey().defaultRandom(),
    key: text().notNull(),
    unsettled: boolean().notNull().default(false),
    occurredAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("auth_failures_key_idx").on(t.key, t.occurredAt)],
);
