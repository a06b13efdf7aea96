import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";

/**
 * The daily pass (spec: "retried on the daily pass"), read from Postgres, never from the
 * queue: every delivery whose last attempt failed and that has passes left, including those
 * still waiting for a quick retry (the pass takes them over). Claiming spends one pass.
 */
async function claimRetryPass(
  db: Db,
  retryPasses: number,
  organizationId?: string,
): Promise<{ id: string; passes: number }[]> {
  const ofOrganization =
    organizationId === undefined ? sql`` : sql`and w.organization_id = ${organizationId}`;
  const claimed = await db.execute(sql`
    update webhook_deliveries d
    set passes = d.passes + 1, next_attempt_at = null
    from webhooks w
    where w.id = d.webhook_id and w.enabled and d.status = 'failed' and d.passes < ${retryPasses}
      ${ofOrganization}
    returning d.id, d.passes`);
  return rowsOf<{ id: string; passes: number }>(claimed);
}

export type ClaimedRetry = { id: string; passes: number };

/**
 * The daily pass, wherever it is started (the worker's cron, the admin area's button,
 * `svc webhook retry-failed`): claims in Postgres, then hands each claimed delivery to `retry`,
 * `concurrency` at a time. Returns how many were claimed.
 */
export async function runRetryPass(
  db: Db,
  retryPasses: number,
  retry: (delivery: ClaimedRetry) => Promise<void>,
  options: { organizationId?: string; concurrency?: number } = {},
): Promise<number> {
  const claimed = await claimRetryPass(db, retryPasses, options.organizationId);
  const concurrency = options.concurrency ?? 1;
  for (let start = 0; start < claimed.length; start += concurrency) {
    await Promise.all(claimed.slice(start, start + concurrency).map(retry));
  }
  return claimed.length;
}

// A delivery whose job was lost (a process died between commit and enqueue, or Redis lost it)
// is found again once it is this late.
const OVERDUE_AFTER = "1 minute";

/** Deliveries due for an attempt that no job has picked up. */
export async function overdueDeliveries(db: Db): Promise<{ id: string; attempts: number }[]> {
  const overdue = await db.execute(sql`
    select d.id, d.attempts
    from webhook_deliveries d
    join webhooks w on w.id = d.webhook_id
    join change_events e on e.id = d.change_event_id
    where d.status in ('pending', 'failed')
      and d.next_attempt_at < now() - ${sql.raw(`interval '${OVERDUE_AFTER}'`)}
      and (w.enabled or e.type = 'change.created')
    limit 500`);
  return rowsOf<{ id: string; attempts: number }>(overdue);
}
