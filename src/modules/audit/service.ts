import { and, desc, eq, gte, lt, or, sql } from "drizzle-orm";
import { z } from "zod";
import { type Db, rowsOf } from "../../db/client.js";
import { type auditActorType, auditLog, type auditOutcome } from "../../db/schema/index.js";

/** Every action the audit log records (docs/operating.md#audit-log). */
export const auditActions = [
  "member.signed_in",
  "member.added",
  "member.removed",
  "member.role_changed",
  "token.minted",
  "token.revoked",
  "oauth_client.created",
  "oauth_client.secret_replaced",
  "grant.approved",
  "grant.revoked",
  "webhook.created",
  "webhook.enabled",
  "webhook.disabled",
  "webhook.secret_replaced",
  "delivery.redelivered",
] as const;
export const auditActionSchema = z.enum(auditActions);
type AuditAction = z.infer<typeof auditActionSchema>;

/** Who acts and from where: every audited service takes one from its face. */
export type AuditContext = {
  actor: { type: (typeof auditActorType.enumValues)[number]; id: string | null; label: string };
  /** The request's client address; null for `svc` and the worker. */
  address: string | null;
};

/** An operator running `svc`: whoever can reach the database. */
export const operatorAudit: AuditContext = {
  actor: { type: "operator", id: null, label: "svc" },
  address: null,
};

/** A signed-in member, from the address of their request. */
export function memberAudit(user: { id: string; email: string }, address: string): AuditContext {
  return { actor: { type: "member", id: user.id, label: user.email }, address };
}

/** The service acting on its own (the demo seed, the worker's automatic disable). */
export const systemAudit: AuditContext = {
  actor: { type: "system", id: null, label: "system" },
  address: null,
};

export type AuditEntry = {
  organizationId: string;
  action: AuditAction;
  target: { type: string; id: string | null; label: string | null };
  outcome?: (typeof auditOutcome.enumValues)[number];
  detail?: Record<string, unknown>;
};

/** Records one entry; call it with the transaction of the action it records. */
export async function recordAudit(tx: Db, context: AuditContext, entry: AuditEntry): Promise<void> {
  await tx.insert(auditLog).values({
    organizationId: entry.organizationId,
    actorType: context.actor.type,
    actorId: context.actor.id,
    actorLabel: context.actor.label,
    action: entry.action,
    targetType: entry.target.type,
    targetId: entry.target.id,
    targetLabel: entry.target.label,
    outcome: entry.outcome ?? "success",
    sourceAddress: context.address,
    detail: entry.detail ?? {},
  });
}

/**
 * Records a sign-in by the account of `email` (its own actor and target), as one statement, in
 * every organisation where it is an active member: none for an unknown email, which costs the
 * same query as a known one, so the answer's timing tells nothing.
 */
export async function recordSignInAudit(
  tx: Db,
  input: { email: string; succeeded: boolean; address: string },
): Promise<void> {
  await tx.execute(sql`
    insert into audit_log (organization_id, actor_type, actor_id, actor_label, action,
      target_type, target_id, target_label, outcome, source_address)
    select m.organization_id, 'member', u.id, u.email, 'member.signed_in', 'member', u.id::text,
      u.email, ${input.succeeded ? "success" : "failure"}::audit_outcome, ${input.address}
    from users u join memberships m on m.user_id = u.id and m.removed_at is null
    where lower(u.email) = lower(${input.email})`);
}

export type AuditRecord = {
  id: string;
  createdAt: Date;
  action: string;
  outcome: string;
  actor: { type: string; id: string | null; label: string };
  target: { type: string; id: string | null; label: string | null };
  sourceAddress: string | null;
  detail: Record<string, unknown>;
};

export type AuditCursor = { createdAt: string; id: string };

export type AuditQuery = {
  organizationId: string;
  action?: AuditAction | null;
  /** The actor's label: a member's email, an addon's name, `svc` or `system`. */
  actor?: string | null;
  since?: Date | null;
  /** Entries older than this one (keyset paging, newest first). */
  before?: AuditCursor | null;
  limit: number;
};

/**
 * One organisation's entries, newest first, at most `limit`; `older` is the cursor of the next
 * page, or null when this one is the last.
 */
export async function listAuditEntries(
  db: Db,
  query: AuditQuery,
): Promise<{ entries: AuditRecord[]; older: AuditCursor | null }> {
  const { before } = query;
  const rows = await db
    .select({
      row: auditLog,
      // To the microsecond, as Postgres orders them: a Date would cut it to the millisecond.
      cursorAt: sql<string>`to_char(${auditLog.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    })
    .from(auditLog)
    .where(
      and(
        eq(auditLog.organizationId, query.organizationId),
        query.action ? eq(auditLog.action, query.action) : undefined,
        query.actor ? eq(auditLog.actorLabel, query.actor) : undefined,
        query.since ? gte(auditLog.createdAt, query.since) : undefined,
        before
          ? or(
              lt(auditLog.createdAt, sql`${before.createdAt}::timestamptz`),
              and(
                eq(auditLog.createdAt, sql`${before.createdAt}::timestamptz`),
                lt(auditLog.id, before.id),
              ),
            )
          : undefined,
      ),
    )
    .orderBy(desc(auditLog.createdAt), desc(auditLog.id))
    .limit(query.limit + 1);
  const page = rows.slice(0, query.limit);
  const entries = page.map(({ row }) => ({
    id: row.id,
    createdAt: row.createdAt,
    action: row.action,
    outcome: row.outcome,
    actor: { type: row.actorType, id: row.actorId, label: row.actorLabel },
    target: { type: row.targetType, id: row.targetId, label: row.targetLabel },
    sourceAddress: row.sourceAddress,
    detail: row.detail,
  }));
  const last = page.at(-1);
  const older =
    rows.length > query.limit && last !== undefined
      ? { createdAt: last.cursorAt, id: last.row.id }
      : null;
  return { entries, older };
}

/**
 * Deletes entries older than the retention, `batchSize` rows per statement so no statement
 * holds many locks or runs long; returns how many went.
 */
export async function pruneAuditLog(
  db: Db,
  settings: { retentionDays: number; pruneBatchSize: number },
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await db.execute(sql`
      delete from audit_log where id in (
        select id from audit_log
        where created_at < now() - make_interval(days => ${settings.retentionDays})
        limit ${settings.pruneBatchSize})
      returning id`);
    const count = rowsOf(result).length;
    deleted += count;
    if (count < settings.pruneBatchSize) return deleted;
  }
}
