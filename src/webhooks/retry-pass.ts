import { sql } from "drizzle-orm";
import type { Config } from "../config.js";
import { type Db, rowsOf } from "../db/client.js";

/** Where a pass stopped, in event order: the last delivery it claimed. */
export type RetryCursor = { changeEventId: number; webhookId: string };

export type ClaimedRetry = { id: string; passes: number } & RetryCursor;

/** The batch size bounds what a pass holds in memory, however many deliveries failed. */
type RetryPassSettings = Pick<Config["webhooks"], "retryPasses" | "retryPassBatchSize">;

/**
 * Where a pass starts (after this delivery, or from the first), and how many more jobs the
 * queue has room for before each batch: the pass stops when it has none.
 */
export type RetryPassWindow = { after: RetryCursor | null; room: () => Promise<number> };

/** Which deliveries a pass or a revival covers: all of them, one organisation's, or one webhook's. */
export type RetryScope = { organizationId?: string; webhookId?: string };

/** The condition on the webhook `w` of a delivery that keeps it within `scope`. */
function withinScope({ organizationId, webhookId }: RetryScope) {
  const ofOrganization =
    organizationId === undefined ? sql`` : sql`and w.organization_id = ${organizationId}`;
  const ofWebhook = webhookId === undefined ? sql`` : sql`and w.id = ${webhookId}`;
  return sql`${ofOrganization} ${ofWebhook}`;
}

/**
 * One batch of the daily pass (spec: "retried on the daily pass"), from Postgres: failed
 * deliveries with passes left, after `after` in event order, so each webhook gets its deliveries
 * in the order of its events. Claiming spends a pass and makes the delivery due now, so the
 * recovery loop finds it again if its job is lost.
 */
async function claimRetryBatch(
  db: Db,
  { retryPasses }: Pick<RetryPassSettings, "retryPasses">,
  after: RetryCursor | null,
  scope: RetryScope,
  limit: number,
): Promise<ClaimedRetry[]> {
  const afterCursor =
    after === null
      ? sql``
      : sql`and (f.change_event_id, f.webhook_id) > (${after.changeEventId}, ${after.webhookId}::uuid)`;
  const claimed = await db.execute(sql`
    update webhook_deliveries d
    set passes = d.passes + 1, next_attempt_at = now()
    from (
      select f.id from webhook_deliveries f
      join webhooks w on w.id = f.webhook_id
      where w.enabled and f.status = 'failed' and f.passes < ${retryPasses}
        ${afterCursor} ${withinScope(scope)}
      order by f.change_event_id, f.webhook_id
      limit ${limit}
      for update of f
    ) batch
    where d.id = batch.id
    returning d.id, d.passes, d.change_event_id as "changeEventId", d.webhook_id as "webhookId"`);
  return rowsOf<ClaimedRetry>(claimed).sort(
    (a, b) => a.changeEventId - b.changeEventId || (a.webhookId < b.webhookId ? -1 : 1),
  );
}

/**
 * Takes exhausted deliveries back into the daily pass with their passes renewed, so the pass
 * that follows retries them: after the receiver is fixed, an admin decides they are worth
 * another try. Returns how many came back.
 */
export async function reviveExhaustedDeliveries(db: Db, scope: RetryScope = {}): Promise<number> {
  const revived = await db.execute(sql`
    update webhook_deliveries d
    set status = 'failed', passes = 0, next_attempt_at = now()
    from webhooks w
    where w.id = d.webhook_id and d.status = 'exhausted' ${withinScope(scope)}
    returning d.id`);
  return rowsOf<{ id: string }>(revived).length;
}

/**
 * The daily pass, from the admin button or `svc webhook retry-failed`: claims a batch at a time
 * in event order (none twice) and hands each to `retry` before the next. Returns how many were claimed.
 */
export async function runRetryPass(
  db: Db,
  settings: RetryPassSettings,
  retry: (batch: ClaimedRetry[]) => Promise<void>,
  scope: RetryScope = {},
): Promise<number> {
  const everything = { after: null, room: async () => Number.POSITIVE_INFINITY };
  return (await runRetryPassWithin(db, settings, retry, everything, scope)).claimed;
}

/**
 * The pass as the worker runs it: it claims no more than the queue has room for, so deliveries
 * wait in Postgres and the queue holds a bounded window of them. `full` says it stopped for lack
 * of room, to go on after `after` (null: from the first) once the queue has some.
 */
export async function runRetryPassWithin(
  db: Db,
  settings: RetryPassSettings,
  retry: (batch: ClaimedRetry[]) => Promise<void>,
  window: RetryPassWindow,
  scope: RetryScope = {},
): Promise<{ claimed: number; full: boolean; after: RetryCursor | null }> {
  let claimed = 0;
  let after = window.after;
  for (;;) {
    const limit = Math.min(settings.retryPassBatchSize, await window.room());
    if (limit <= 0) return { claimed, full: true, after };
    const batch = await claimRetryBatch(db, settings, after, scope, limit);
    const last = batch.at(-1);
    if (last === undefined) return { claimed, full: false, after };
    await retry(batch);
    claimed += batch.length;
    after = { changeEventId: last.changeEventId, webhookId: last.webhookId };
  }
}

/**
 * Deliveries due for an attempt that nothing has picked up for `overdueAfterMs`: their job was lost (a
 * process died between commit and enqueue, or Redis lost it), a worker died while they waited in
 * its dispatcher, or the dispatcher had no room. An open breaker's deliveries wait for its probe.
 */
export async function overdueDeliveries(
  db: Db,
  {
    overdueAfterMs,
    recoveryBatchSize,
  }: Pick<Config["webhooks"], "overdueAfterMs" | "recoveryBatchSize">,
): Promise<{ id: string; attempts: number }[]> {
  const overdue = await db.execute(sql`
    select d.id, d.attempts
    from webhook_deliveries d
    join webhooks w on w.id = d.webhook_id
    join change_events e on e.id = d.change_event_id
    where d.status in ('pending', 'failed')
      and d.next_attempt_at < now() - make_interval(secs => ${overdueAfterMs / 1000})
      and (w.enabled or e.type = 'change.created')
      and w.circuit_open_until is null
    order by d.change_event_id
    limit ${recoveryBatchSize}`);
  return rowsOf<{ id: string; attempts: number }>(overdue);
}
