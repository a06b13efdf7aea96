import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";

/** A new delivery to attempt, with the webhook and organisation the dispatcher counts it by. */
export type FannedOutDelivery = { deliveryId: string; webhookId: string; organizationId: string };

/**
 * Fans change events out into one delivery per subscribed webhook, held if it is disabled, in one
 * statement. SKIP LOCKED lets relays run side by side (ids commit out of order, so no "last seen
 * id"). Returns the new deliveries to attempt now (enabled webhooks with a closed breaker), oldest
 * event first.
 */
export async function fanOutChangeEvents(
  db: Db,
  batchSize: number,
): Promise<{ events: number; deliveries: FannedOutDelivery[] }> {
  const result = await db.execute(sql`
    with claimed as (
      select id from change_events
      where fanned_out_at is null
      order by id
      limit ${batchSize}
      for update skip locked
    ), fanned_out as (
      update change_events e set fanned_out_at = now()
      from claimed where e.id = claimed.id
      returning e.id, e.organization_id, e.type
    ), inserted as (
      insert into webhook_deliveries (webhook_id, change_event_id, next_attempt_at)
      select w.id, e.id, now()
      from fanned_out e
      join webhooks w on w.organization_id = e.organization_id
      join webhook_subscriptions s on s.webhook_id = w.id and s.event_type = e.type
      on conflict (change_event_id, webhook_id) do nothing
      returning id, change_event_id, webhook_id
    )
    select
      (select count(*) from fanned_out)::int as events,
      coalesce(
        (
          select json_agg(
            json_build_object(
              'deliveryId', i.id, 'webhookId', w.id, 'organizationId', w.organization_id
            )
            order by i.change_event_id
          )
          from inserted i join webhooks w on w.id = i.webhook_id
          where w.enabled and w.circuit_open_until is null
        ),
        '[]'::json
      ) as deliveries`);
  const [row] = rowsOf<{ events: number; deliveries: FannedOutDelivery[] }>(result);
  return { events: row?.events ?? 0, deliveries: row?.deliveries ?? [] };
}

/** The channel an enabled webhook is announced on, with `<webhook id>:<release stamp>`. */
export const DELIVERIES_RELEASED = "webhook_deliveries_released";

/**
 * The deliveries a disabled webhook held, oldest event first, to queue once it is enabled
 * again. Failed ones keep their own schedule (quick retries, the daily pass).
 */
export async function heldDeliveries(
  db: Db,
  webhookId: string,
): Promise<{ id: string; attempts: number }[]> {
  const held = await db.execute(sql`
    select d.id, d.attempts
    from webhook_deliveries d
    join webhooks w on w.id = d.webhook_id and w.enabled
    where d.webhook_id = ${webhookId} and d.status = 'pending'
    order by d.change_event_id`);
  return rowsOf<{ id: string; attempts: number }>(held);
}

/**
 * The deliveries of an enabled webhook with a closed breaker that are due now, oldest event
 * first: those that waited while its breaker was open, or found no room in the dispatcher.
 * Those with a later retry time keep it.
 *
 * The due check is wrapped in `is true` so no index can serve it: right after a pass makes
 * thousands of deliveries due, the statistics still see their next attempt as null, and the
 * planner would read every due row through the status index and sort them instead of walking
 * this webhook's unsettled ones in event order (bench/RESULTS.md, the backlog's drain).
 */
export async function dueDeliveriesOf(
  db: Db,
  webhookId: string,
  limit = 10_000,
): Promise<{ id: string; attempts: number }[]> {
  const due = await db.execute(sql`
    select d.id, d.attempts
    from webhook_deliveries d
    join webhooks w on w.id = d.webhook_id and w.enabled and w.circuit_open_until is null
    where d.webhook_id = ${webhookId} and d.status in ('pending', 'failed')
      and (d.next_attempt_at <= now()) is true
    order by d.change_event_id
    limit ${limit}`);
  return rowsOf<{ id: string; attempts: number }>(due);
}
