import { sql } from "drizzle-orm";
import type { Config } from "../config.js";
import { type Database, type Db, rowsOf } from "../db/client.js";
import type { WebhookRuntime } from "./delivery-worker.js";
import { every } from "./every.js";

export type RetentionSettings = Pick<Config["retention"], "olderThanSeconds" | "batchSize">;

/** What one run removed, by kind. */
export type RetentionRemoved = { deliveries: number; attempts: number; events: number };

// Shared by every instance, so that one run at a time works through the delivery log.
export const RETENTION_LOCK_KEY = 727_465_103;

/**
 * One batch of settled deliveries (delivered, or exhausted and not taken back) settled before
 * the limit, with their attempts. Age is the settled time, so a delivery held for weeks keeps
 * its log for the whole period after it is sent. Rows a writer holds are skipped, not waited on.
 */
async function removeSettledDeliveries(
  db: Db,
  { olderThanSeconds, batchSize }: RetentionSettings,
): Promise<{ deliveries: number; attempts: number }> {
  const result = await db.execute(sql`
    with batch as (
      select id from webhook_deliveries
      where status in ('delivered', 'exhausted')
        and coalesce(delivered_at, last_attempt_at, created_at)
          < now() - make_interval(secs => ${olderThanSeconds})
      limit ${batchSize}
      for update skip locked
    ), attempts as (
      delete from webhook_attempts a using batch where a.delivery_id = batch.id returning a.id
    ), deliveries as (
      delete from webhook_deliveries d using batch where d.id = batch.id returning d.id
    )
    select (select count(*) from deliveries)::int as deliveries,
      (select count(*) from attempts)::int as attempts`);
  const [counts] = rowsOf<{ deliveries: number; attempts: number }>(result);
  return counts ?? { deliveries: 0, attempts: 0 };
}

type EventWindow = { events: number; windowEnd: number | null; anyOlder: boolean | null };

/**
 * Change events recorded before the limit that were fanned out and have no delivery left, among
 * the next `batchSize` events after `after` in id order: a walk over the primary key, so a batch
 * never scans the whole table. An event not yet fanned out stays: the relay has still to read it.
 */
async function removeSpentEvents(
  db: Db,
  { olderThanSeconds, batchSize }: RetentionSettings,
  after: number,
): Promise<EventWindow> {
  const cutoff = sql`now() - make_interval(secs => ${olderThanSeconds})`;
  const result = await db.execute(sql`
    with events_window as (
      select max(id) as id, bool_or(occurred_at < ${cutoff}) as older from (
        select id, occurred_at from change_events where id > ${after}
        order by id limit ${batchSize}) w
    ), batch as (
      select e.id from change_events e
      where e.id > ${after} and e.id <= (select id from events_window)
        and e.fanned_out_at is not null
        and e.occurred_at < ${cutoff}
        and not exists (select 1 from webhook_deliveries d where d.change_event_id = e.id)
      for update of e skip locked
    ), removed as (
      delete from change_events e using batch where e.id = batch.id returning e.id
    )
    select (select count(*) from removed)::int as events, w.id as "windowEnd",
      w.older as "anyOlder"
    from events_window w`);
  const [window] = rowsOf<EventWindow>(result);
  return window ?? { events: 0, windowEnd: null, anyOlder: null };
}

/** Every batch in turn, each statement its own short transaction, until one comes back short. */
async function removeExpiredRows(db: Db, settings: RetentionSettings): Promise<RetentionRemoved> {
  const removed: RetentionRemoved = { deliveries: 0, attempts: 0, events: 0 };
  for (;;) {
    const batch = await removeSettledDeliveries(db, settings);
    removed.deliveries += batch.deliveries;
    removed.attempts += batch.attempts;
    if (batch.deliveries < settings.batchSize) break;
  }
  // Ids follow recording times, so the walk stops at the first window wholly inside the limit.
  let after = 0;
  for (;;) {
    const window = await removeSpentEvents(db, settings, after);
    removed.events += window.events;
    if (window.windowEnd === null || window.anyOlder !== true) break;
    after = Number(window.windowEnd);
  }
  return removed;
}

/**
 * The delivery log's retention (docs/webhooks.md, "Retention"), from the worker's schedule or
 * `svc retention run`. Null when another run holds the lock: it is doing the same work.
 */
export function runRetention(
  database: Pick<Database, "db" | "whileLocked">,
  settings: RetentionSettings,
): Promise<RetentionRemoved | null> {
  return database.whileLocked(RETENTION_LOCK_KEY, () => removeExpiredRows(database.db, settings));
}

/**
 * Retention every RETENTION_INTERVAL_MS in the worker. Every worker runs the loop; the lock lets
 * one of them do the work and the others skip that round. Returns the function that stops it.
 */
export function startRetentionLoop(
  runtime: Pick<WebhookRuntime, "config" | "logger">,
  database: Pick<Database, "db" | "whileLocked">,
): () => Promise<void> {
  const retention = every(
    runtime.config.retention.intervalMs,
    async () => {
      const removed = await runRetention(database, runtime.config.retention);
      if (removed !== null) runtime.logger.info({ task: "retention", ...removed }, "retention ran");
    },
    (err) => runtime.logger.error({ err, task: "retention" }, "webhook loop failed"),
  );
  return () => retention.stop();
}
