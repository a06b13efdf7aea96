import { sql } from "drizzle-orm";
import {
  boolean,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { changeEvents } from "./library.js";
import { organizations, users } from "./organizations.js";

export const deliveryStatus = pgEnum("delivery_status", [
  "pending",
  "delivered",
  "failed",
  "exhausted",
]);

export const webhooks = pgTable(
  "webhooks",
  {
    id: uuid().primaryKey().defaultRandom(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    url: text().notNull(),
    // AES-256-GCM ciphertext of the `whsec_` secret under SECRET_KEY.
    secretCiphertext: text().notNull(),
    enabled: boolean().notNull().default(true),
    disabledReason: text(),
    // Start of the current run of failed attempts; cleared by any success. A run longer than
    // the auto-disable period disables the webhook.
    failingSince: timestamp({ withTimezone: true }),
    // The circuit breaker, shared by every worker: set while it is open (no attempts until this
    // time, then one probe), with the cooldown it was opened for and the failures that tripped it.
    circuitOpenUntil: timestamp({ withTimezone: true }),
    circuitCooldownSeconds: integer(),
    circuitFailures: integer(),
    createdBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("webhooks_org_idx").on(t.organizationId)],
);

export const webhookSubscriptions = pgTable(
  "webhook_subscriptions",
  {
    webhookId: uuid()
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    eventType: text().notNull(),
    // The order the registrant listed the types in, which lists show back.
    position: integer().notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.webhookId, t.eventType] }),
    index("webhook_subscriptions_type_idx").on(t.eventType),
  ],
);

export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid().primaryKey().defaultRandom(),
    webhookId: uuid()
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    changeEventId: integer()
      .notNull()
      .references(() => changeEvents.id, { onDelete: "cascade" }),
    status: deliveryStatus().notNull().default("pending"),
    attempts: integer().notNull().default(0),
    // Daily retry passes already spent on this delivery.
    passes: integer().notNull().default(0),
    nextAttemptAt: timestamp({ withTimezone: true }),
    lastAttemptAt: timestamp({ withTimezone: true }),
    deliveredAt: timestamp({ withTimezone: true }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_event_webhook_idx").on(t.changeEventId, t.webhookId),
    index("webhook_deliveries_webhook_idx").on(t.webhookId, t.createdAt),
    index("webhook_deliveries_status_idx").on(t.status, t.nextAttemptAt),
    // The admin delivery log filtered by status, newest first (keyset on created_at, id).
    index("webhook_deliveries_webhook_status_idx").on(t.webhookId, t.status, t.createdAt, t.id),
    // A webhook's due deliveries in event order (the dispatcher's refill, a breaker's release):
    // a walk that stops at its limit, however many wait behind a receiver that was down.
    index("webhook_deliveries_webhook_unsettled_idx")
      .on(t.webhookId, t.changeEventId)
      .where(sql`${t.status} in ('pending', 'failed')`),
    // The daily pass's walk over failed deliveries in event order, which never reads the rest.
    index("webhook_deliveries_failed_event_idx")
      .on(t.changeEventId, t.webhookId)
      .where(sql`${t.status} = 'failed'`),
    // Retention's walk over settled deliveries by settled time, which never reads the unsettled.
    index("webhook_deliveries_settled_idx")
      .on(sql`coalesce(${t.deliveredAt}, ${t.lastAttemptAt}, ${t.createdAt})`)
      .where(sql`${t.status} in ('delivered', 'exhausted')`),
  ],
);

export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    id: uuid().primaryKey().defaultRandom(),
    deliveryId: uuid()
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    attemptedAt: timestamp({ withTimezone: true }).notNull(),
    durationMs: integer().notNull(),
    statusCode: integer(),
    error: text(),
    // The first KiB of the receiver's answer.
    responseSnippet: text(),
    // The headers sent with this attempt (timestamp and signature included; the secret never
    // is), so the admin page shows what the receiver got. Null for attempts recorded before.
    requestHeaders: jsonb().$type<Record<string, string>>(),
  },
  (t) => [index("webhook_attempts_delivery_idx").on(t.deliveryId, t.attemptedAt)],
);
