import { asc, eq, sql } from "drizzle-orm";
import { expect } from "vitest";
import type { Db } from "../../src/db/client.js";
import { changeEvents } from "../../src/db/schema/index.js";

/** The change events recorded for one target, oldest first: who did what, and the diff. */
export function eventsFor(db: Db, targetId: string) {
  return db
    .select({
      organizationId: changeEvents.organizationId,
      type: changeEvents.type,
      action: changeEvents.action,
      targetKind: changeEvents.targetKind,
      targetId: changeEvents.targetId,
      actorId: changeEvents.actorId,
      diff: changeEvents.diff,
    })
    .from(changeEvents)
    .where(eq(changeEvents.targetId, targetId))
    .orderBy(asc(changeEvents.id));
}

/** Whole change-event rows for one target, oldest first, for checks that none was touched. */
export function eventRowsFor(db: Db, targetId: string) {
  return db
    .select()
    .from(changeEvents)
    .where(eq(changeEvents.targetId, targetId))
    .orderBy(asc(changeEvents.id));
}

/**
 * Runs `action` while a trigger makes every change-event insert whose diff sets the title to
 * "Boom" fail, so that a test can check that the write's earlier statements roll back with it.
 */
export async function whileBoomEventsFail<T>(db: Db, action: () => Promise<T>): Promise<T> {
  await db.execute(sql`
    create function refuse_boom() returns trigger language plpgsql as $$
    begin raise exception 'boom'; end $$`);
  await db.execute(sql`
    create trigger refuse_boom before insert on change_events for each row
    when (new.diff->'after'->>'title' = 'Boom') execute function refuse_boom()`);
  try {
    return await action();
  } finally {
    await db.execute(sql`drop trigger refuse_boom on change_events`);
    await db.execute(sql`drop function refuse_boom()`);
  }
}

/** The target has exactly one change event, and it matches `expected`. */
export async function expectOneEventFor(
  db: Db,
  targetId: string,
  expected: Record<string, unknown>,
): Promise<void> {
  const events = await eventRowsFor(db, targetId);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject(expected);
}
