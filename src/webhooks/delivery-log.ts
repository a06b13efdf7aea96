import { and, asc, desc, eq, gt, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import {
  changeEvents,
  deliveryStatus,
  webhookAttempts,
  webhookDeliveries,
} from "../db/schema/index.js";
import { webhookPayload } from "./payload.js";

/**
 * The delivery log's reads (the admin webhook page; `svc webhook deliveries` through
 * `listDeliveries`): counts per hour and day, and keyset pages with every attempt. Each starts
 * from one webhook's rows in an index, so a busy webhook costs one page, never a table scan.
 */

export type DeliveryStatus = (typeof deliveryStatus.enumValues)[number];
export const deliveryStatuses = deliveryStatus.enumValues;

/** Deliveries recorded in one hour or one day (UTC), by their state now. */
export type ActivityBucket = {
  start: Date;
  delivered: number;
  failed: number;
  pending: number;
  total: number;
};

export type ActivitySummary = {
  buckets: ActivityBucket[];
  total: number;
  delivered: number;
  /** Failed or exhausted: the deliveries that have not reached the receiver and may never. */
  failed: number;
  pending: number;
  /** Delivered out of those settled (pending ones not counted); null when none settled. */
  successRate: number | null;
};

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

function summarize(buckets: ActivityBucket[]): ActivitySummary {
  const sum = (pick: (bucket: ActivityBucket) => number) =>
    buckets.reduce((total, bucket) => total + pick(bucket), 0);
  const delivered = sum((b) => b.delivered);
  const failed = sum((b) => b.failed);
  const settled = delivered + failed;
  return {
    buckets,
    total: sum((b) => b.total),
    delivered,
    failed,
    pending: sum((b) => b.pending),
    successRate: settled === 0 ? null : delivered / settled,
  };
}

function emptyBuckets(first: number, count: number, size: number): ActivityBucket[] {
  return Array.from({ length: count }, (_, index) => ({
    start: new Date(first + index * size),
    delivered: 0,
    failed: 0,
    pending: 0,
    total: 0,
  }));
}

/**
 * The last 24 hours by the hour (the current hour last) and the last 7 days by the day (today
 * last), UTC, from one grouped read of the webhook's deliveries of the last 7 days.
 */
export async function deliveryActivity(
  db: Db,
  webhookId: string,
  now: Date,
): Promise<{ hours: ActivitySummary; days: ActivitySummary }> {
  const currentHour = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS;
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  const hours = emptyBuckets(currentHour - 23 * HOUR_MS, 24, HOUR_MS);
  const days = emptyBuckets(today - 6 * DAY_MS, 7, DAY_MS);
  const since = days[0]?.start ?? new Date(today);
  const hour = sql<string>`date_trunc('hour', ${webhookDeliveries.createdAt}, 'UTC')`;
  const rows = await db
    .select({
      hourMs: sql<string>`(extract(epoch from ${hour}) * 1000)::bigint`,
      delivered:
        sql<number>`count(*) filter (where ${webhookDeliveries.status} = 'delivered')`.mapWith(
          Number,
        ),
      failed:
        sql<number>`count(*) filter (where ${webhookDeliveries.status} in ('failed', 'exhausted'))`.mapWith(
          Number,
        ),
      pending: sql<number>`count(*) filter (where ${webhookDeliveries.status} = 'pending')`.mapWith(
        Number,
      ),
    })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.webhookId, webhookId), gte(webhookDeliveries.createdAt, since)))
    .groupBy(hour);
  for (const row of rows) {
    const start = Number(row.hourMs);
    const counts = [row.delivered, row.failed, row.pending] as const;
    const add = (bucket: ActivityBucket | undefined) => {
      if (bucket === undefined) return;
      bucket.delivered += counts[0];
      bucket.failed += counts[1];
      bucket.pending += counts[2];
      bucket.total += counts[0] + counts[1] + counts[2];
    };
    add(hours[(start - (hours[0]?.start.getTime() ?? 0)) / HOUR_MS]);
    add(days[Math.floor((start - since.getTime()) / DAY_MS)]);
  }
  return { hours: summarize(hours), days: summarize(days) };
}

/** A position in the log: the creation time (to the microsecond, as Postgres has it) and id. */
export type LogCursor = { createdAt: string; id: string };

const CURSOR_PATTERN =
  /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function encodeCursor(cursor: LogCursor): string {
  return Buffer.from(`${cursor.createdAt}|${cursor.id}`).toString("base64url");
}

/** The cursor of a link, or null when the text cannot be one of ours. */
export function decodeCursor(text: string): LogCursor | null {
  const match = CURSOR_PATTERN.exec(Buffer.from(text, "base64url").toString("utf8"));
  if (match === null) return null;
  return { createdAt: match[1] as string, id: match[2] as string };
}

export type LogQuery = {
  webhookId: string;
  status: DeliveryStatus | null;
  eventType: string | null;
  /** Older than this position (the next page), or newer than it (the previous page). */
  after: { direction: "older" | "newer"; cursor: LogCursor } | null;
  limit: number;
};

type LoggedAttempt = {
  id: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseSnippet: string | null;
  requestHeaders: Record<string, string> | null;
};

type LoggedDelivery = {
  id: string;
  status: DeliveryStatus;
  attempts: number;
  createdAt: Date;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  event: { id: number; type: string };
  /** The body every attempt sends: built from the stored event as the sender builds it. */
  payload: ReturnType<typeof webhookPayload>;
  attemptLog: LoggedAttempt[];
};

export type LogPage = {
  deliveries: LoggedDelivery[];
  /** Where the next (older) page starts; null on the last page. */
  older: LogCursor | null;
  /** Where the previous (newer) page starts; null on the first page. */
  newer: LogCursor | null;
};

const createdAtText = sql<string>`to_char(${webhookDeliveries.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** One page of the delivery log, newest first, with every attempt of its deliveries. */
export async function deliveryLogPage(db: Db, query: LogQuery): Promise<LogPage> {
  const conditions: (SQL | undefined)[] = [eq(webhookDeliveries.webhookId, query.webhookId)];
  if (query.status !== null) conditions.push(eq(webhookDeliveries.status, query.status));
  if (query.eventType !== null) conditions.push(eq(changeEvents.type, query.eventType));
  const newer = query.after?.direction === "newer";
  if (query.after !== null) {
    const position = sql`(${webhookDeliveries.createdAt}, ${webhookDeliveries.id})`;
    const cursor = sql`(${query.after.cursor.createdAt}::timestamptz, ${query.after.cursor.id}::uuid)`;
    conditions.push(newer ? gt(position, cursor) : lt(position, cursor));
  }
  const order = newer ? asc : desc;
  const rows = await db
    .select({
      id: webhookDeliveries.id,
      status: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
      createdAt: webhookDeliveries.createdAt,
      createdAtText,
      lastAttemptAt: webhookDeliveries.lastAttemptAt,
      nextAttemptAt: webhookDeliveries.nextAttemptAt,
      deliveredAt: webhookDeliveries.deliveredAt,
      event: changeEvents,
    })
    .from(webhookDeliveries)
    .innerJoin(changeEvents, eq(changeEvents.id, webhookDeliveries.changeEventId))
    .where(and(...conditions))
    .orderBy(order(webhookDeliveries.createdAt), order(webhookDeliveries.id))
    .limit(query.limit + 1);
  const more = rows.length > query.limit;
  // Back at the newest end: show the first page whole rather than the few rows left of it.
  if (newer && !more) return deliveryLogPage(db, { ...query, after: null });
  const page = rows.slice(0, query.limit);
  if (newer) page.reverse();
  const attempts = await attemptsOf(
    db,
    page.map((row) => row.id),
  );
  const positionOf = (row: (typeof page)[number] | undefined): LogCursor | null =>
    row === undefined ? null : { createdAt: row.createdAtText, id: row.id };
  return {
    deliveries: page.map((row) => ({
      id: row.id,
      status: row.status,
      attempts: row.attempts,
      createdAt: row.createdAt,
      lastAttemptAt: row.lastAttemptAt,
      nextAttemptAt: row.nextAttemptAt,
      deliveredAt: row.deliveredAt,
      event: { id: row.event.id, type: row.event.type },
      payload: webhookPayload(row.event),
      attemptLog: attempts.get(row.id) ?? [],
    })),
    // Coming from an older page there is always something newer: the page we came from.
    older: newer || more ? positionOf(page.at(-1)) : null,
    newer: query.after === null ? null : positionOf(page[0]),
  };
}

/** Every attempt of the given deliveries, oldest first (webhook_attempts_delivery_idx). */
async function attemptsOf(db: Db, deliveryIds: string[]): Promise<Map<string, LoggedAttempt[]>> {
  const byDelivery = new Map<string, LoggedAttempt[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const rows = await db
    .select()
    .from(webhookAttempts)
    .where(inArray(webhookAttempts.deliveryId, deliveryIds))
    .orderBy(asc(webhookAttempts.attemptedAt), asc(webhookAttempts.id));
  for (const { deliveryId, ...attempt } of rows) {
    const list = byDelivery.get(deliveryId) ?? [];
    list.push(attempt);
    byDelivery.set(deliveryId, list);
  }
  return byDelivery;
}
