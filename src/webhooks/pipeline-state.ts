import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import type { PipelineState } from "../metrics/metrics.js";

type Row = {
  due: number;
  held: number;
  failed: number;
  exhausted: number;
  oldest_due_seconds: number | null;
  unrelayed: number;
  oldest_unrelayed_seconds: number | null;
};

/**
 * The deliveries not yet delivered, by state, and the change events not yet fanned out, in one
 * statement: the first part walks webhook_deliveries_status_idx over the unsent statuses only,
 * the second change_events_pending_fanout_idx. Due: to be attempted now (an open breaker
 * included); held: its webhook is disabled; failed: waiting for a later retry.
 */
export async function readPipelineState(db: Db): Promise<PipelineState> {
  const result = await db.execute(sql`
    with unsent as (
      select d.status, d.next_attempt_at, w.enabled
      from webhook_deliveries d
      join webhooks w on w.id = d.webhook_id
      where d.status in ('pending', 'failed', 'exhausted')
    ), unrelayed as (
      select e.occurred_at from change_events e where e.fanned_out_at is null
    )
    select
      count(*) filter (where status <> 'exhausted' and enabled and next_attempt_at <= now())::int
        as due,
      count(*) filter (where status <> 'exhausted' and not enabled)::int as held,
      count(*) filter (where status = 'failed' and enabled
        and (next_attempt_at is null or next_attempt_at > now()))::int as failed,
      count(*) filter (where status = 'exhausted')::int as exhausted,
      extract(epoch from now() - min(next_attempt_at) filter (
        where status <> 'exhausted' and enabled and next_attempt_at <= now()))::float8
        as oldest_due_seconds,
      (select count(*) from unrelayed)::int as unrelayed,
      (select extract(epoch from now() - min(occurred_at)) from unrelayed)::float8
        as oldest_unrelayed_seconds
    from unsent`);
  const [row] = rowsOf<Row>(result);
  return {
    deliveries: {
      due: row?.due ?? 0,
      held: row?.held ?? 0,
      failed: row?.failed ?? 0,
      exhausted: row?.exhausted ?? 0,
    },
    oldestDueSeconds: Math.max(0, row?.oldest_due_seconds ?? 0),
    unrelayedEvents: row?.unrelayed ?? 0,
    oldestUnrelayedSeconds: Math.max(0, row?.oldest_unrelayed_seconds ?? 0),
  };
}
