import { asc, inArray, isNull, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import {
  changeEvents,
  webhookDeliveries,
  webhookSubscriptions,
  webhooks,
} from "../db/schema/index.js";

const BATCH_SIZE = 200;

/**
 * Fans change events out into delivery rows, one per enabled webhook of the event's
 * organisation subscribed to its type. Events are claimed with FOR UPDATE SKIP LOCKED (ids can
 * commit out of order, so no "last seen id"), which lets several relays run side by side
 * without fanning an event out twice; the unique (event, webhook) index is the last guard.
 * Returns the new delivery ids, for the caller to enqueue after the commit.
 */
export async function fanOutChangeEvents(
  db: Db,
): Promise<{ events: number; deliveryIds: string[] }> {
  return db.transaction(async (tx) => {
    const claimed = await tx
      .select({ id: changeEvents.id })
      .from(changeEvents)
      .where(isNull(changeEvents.fannedOutAt))
      .orderBy(asc(changeEvents.id))
      .limit(BATCH_SIZE)
      .for("update", { skipLocked: true });
    const eventIds = claimed.map((event) => event.id);
    if (eventIds.length === 0) return { events: 0, deliveryIds: [] };
    const inserted = await tx.execute(sql`
      insert into ${webhookDeliveries} (webhook_id, change_event_id, next_attempt_at)
      select ${webhooks.id}, ${changeEvents.id}, now()
      from ${changeEvents}
      join ${webhooks} on ${webhooks.organizationId} = ${changeEvents.organizationId} and ${webhooks.enabled}
      join ${webhookSubscriptions} on ${webhookSubscriptions.webhookId} = ${webhooks.id}
        and ${webhookSubscriptions.eventType} = ${changeEvents.type}
      where ${inArray(changeEvents.id, eventIds)}
      on conflict (change_event_id, webhook_id) do nothing
      returning id`);
    await tx
      .update(changeEvents)
      .set({ fannedOutAt: sql`now()` })
      .where(inArray(changeEvents.id, eventIds));
    return {
      events: eventIds.length,
      deliveryIds: rowsOf<{ id: string }>(inserted).map((row) => row.id),
    };
  });
}
