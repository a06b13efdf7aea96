import { index, integer, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { apiTokens } from "./access.js";

/**
 * The first answer to each `Idempotency-Key` a token sent with a POST, replayed to a retry of
 * the same request until it expires (24 h). A row without a status is a request still running.
 */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    tokenId: uuid()
      .notNull()
      .references(() => apiTokens.id, { onDelete: "cascade" }),
    key: text().notNull(),
    /** Method, route, path and body of the request that first used the key. */
    fingerprint: text().notNull(),
    responseStatus: integer(),
    responseContentType: text(),
    responseBody: text(),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp({ withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tokenId, t.key] }),
    index("idempotency_keys_expires_idx").on(t.expiresAt),
  ],
);
