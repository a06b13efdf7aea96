import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";

const BATCH_SIZE = 200;

/**
 * Fans change events out into delivery rows, one per enabled webhook of the event's
 * organisation subscribed to its type, in one statement (one round trip, atomic). Events are
 * claimed with FOR UPDATE SKIP LOCKED (ids can commit out of order, so no "last seen id"),
 * which lets several relays run side by side without fanning an event out twice; the unique
 * (event, webhook) index is the last guard. Returns the new delivery ids, for the caller to
 * enqueue after the commit.
 */
export async function fanOutChangeEvents(
  db: Db,
): Promise<{ events: number; deliveryIds: string[] }> {
  const result = await db.execute(sql`
    with claimed as (
      select id from change_events
      where fanned_out_at is null
      order by id
      limit ${BATCH_SIZE}
      for update skip locked
    ), fanned_out as (
      update change_events e set fanned_out_at = now()
      from claimed where e.id = claimed.id
      returning e.id, e.organization_id, e.type
    ), inserted as (
      insert into webhook_deliveries (webhook_id, change_event_id, next_attempt_at)
      select w.id, e.id, now()
      from fanned_out e
      join webhooks w on w.organization_id = e.organization_id and w.enabled
      join webhook_subscriptions s on s.webhook_id = w.id and s.event_type = e.type
      on conflict (change_event_id, webhook_id) do nothing
      returning id, change_event_id
    )
    select
      (select count(*) from fanned_out)::int as events,
      coalesce(
        (select json_agg(id order by change_event_id) from inserted), '[]'::json
      ) as delivery_ids`);
  const [row] = rowsOf<{ events: number; delivery_ids: string[] }>(result);
  return { events: row?.events ?? 0, deliveryIds: row?.delivery_ids ?? [] };
}
