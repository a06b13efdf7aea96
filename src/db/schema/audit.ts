import { index, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations } from "./organizations.js";

/** Who acted: a signed-in member, an addon (its client), an operator's `svc`, or the service. */
export const auditActorType = pgEnum("audit_actor_type", ["member", "addon", "operator", "system"]);
export const auditOutcome = pgEnum("audit_outcome", ["success", "failure"]);

/**
 * The audit log org admins read (docs/operating.md#audit-log): one row per security-relevant
 * action, written in the action's own transaction. Actor and target are copied as labels, so an
 * entry still reads the same after they are deleted; rows older than AUDIT_LOG_RETENTION_DAYS go.
 */
export const auditLog = pgTable(
  "audit_log",
  {
    id: uuid().primaryKey().defaultRandom(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    actorType: auditActorType().notNull(),
    // The user or OAuth client record; null for an operator or the service itself.
    actorId: uuid(),
    actorLabel: text().notNull(),
    action: text().notNull(),
    targetType: text().notNull(),
    targetId: text(),
    targetLabel: text(),
    outcome: auditOutcome().notNull().default("success"),
    // The request's client address; null for `svc` and the worker.
    sourceAddress: text(),
    detail: jsonb().$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // The Activity page and `svc audit list`: newest first, keyset on (created_at, id).
    index("audit_log_org_created_idx").on(t.organizationId, t.createdAt.desc(), t.id.desc()),
    index("audit_log_org_action_idx").on(
      t.organizationId,
      t.action,
      t.createdAt.desc(),
      t.id.desc(),
    ),
    index("audit_log_org_actor_idx").on(
      t.organizationId,
      t.actorLabel,
      t.createdAt.desc(),
      t.id.desc(),
    ),
    // Retention deletes the oldest rows first.
    index("audit_log_created_idx").on(t.createdAt),
  ],
);
