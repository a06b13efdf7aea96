import { inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, rowsOf } from "../../src/db/client.js";
import { changeEvents, webhookDeliveries } from "../../src/db/schema/index.js";
import { RETENTION_LOCK_KEY, runRetention } from "../../src/webhooks/retention.js";
import { runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { importOrganization } from "../support/fixtures.js";

let t: TestDatabase;
let db: Db;
let organizationId: string;
let enabledHook: string;
let disabledHook: string;

const DAY = 86_400;
const settings = { olderThanSeconds: 30 * DAY, batchSize: 2 };

async function webhook(enabled: boolean): Promise<string> {
  const result = await db.execute(sql`
    insert into webhooks (organization_id, url, secret_ciphertext, enabled)
    values (${organizationId}, 'https://receiver.example/hook', 'unused', ${enabled})
    returning id`);
  return rowsOf<{ id: string }>(result)[0]?.id ?? "";
}

/** A change event recorded `ageDays` ago, fanned out then unless `unrelayed`. */
async function changeEvent(ageDays: number, unrelayed = false): Promise<number> {
  const occurred = sql`now() - make_interval(days => ${ageDays})`;
  const result = await db.execute(sql`
    insert into change_events
      (organization_id, type, action, target_kind, target_id, occurred_at, diff, fanned_out_at)
    values (${organizationId}, 'task.created', 'created', 'task', 'T-1', ${occurred},
      '{"before":{},"after":{}}', ${unrelayed ? null : occurred})
    returning id`);
  return rowsOf<{ id: number }>(result)[0]?.id ?? 0;
}

type DeliveryRow = {
  webhookId?: string;
  status: "pending" | "delivered" | "failed" | "exhausted";
  createdDaysAgo: number;
  /** Days ago it was delivered (delivered) or last attempted (others), with one attempt each. */
  settledDaysAgo?: number;
  attempts?: number;
  passes?: number;
};

/** A delivery of a new event as old as the delivery, with its attempts. */
async function delivery(row: DeliveryRow, eventId?: number): Promise<string> {
  const event = eventId ?? (await changeEvent(row.createdDaysAgo));
  const created = sql`now() - make_interval(days => ${row.createdDaysAgo})`;
  const settled =
    row.settledDaysAgo === undefined
      ? null
      : sql`now() - make_interval(days => ${row.settledDaysAgo})`;
  const result = await db.execute(sql`
    insert into webhook_deliveries
      (webhook_id, change_event_id, status, attempts, passes, next_attempt_at, last_attempt_at,
        delivered_at, created_at)
    values (${row.webhookId ?? enabledHook}, ${event}, ${row.status}, ${row.attempts ?? 0},
      ${row.passes ?? 0}, ${row.status === "pending" || row.status === "failed" ? created : null},
      ${settled}, ${row.status === "delivered" ? settled : null}, ${created})
    returning id`);
  const id = rowsOf<{ id: string }>(result)[0]?.id ?? "";
  for (let attempt = 0; attempt < (row.attempts ?? 0); attempt++) {
    await db.execute(sql`
      insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code)
      values (${id}, ${created}, 5, 200)`);
  }
  return id;
}

async function existingDeliveries(ids: string[]): Promise<string[]> {
  const rows = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.id, ids));
  return rows.map((row) => row.id).sort();
}

async function existingEvents(ids: number[]): Promise<number[]> {
  const rows = await db
    .select({ id: changeEvents.id })
    .from(changeEvents)
    .where(inArray(changeEvents.id, ids));
  return rows.map((row) => row.id).sort((a, b) => a - b);
}

async function attemptCount(): Promise<number> {
  const result = await db.execute(sql`select count(*)::int as n from webhook_attempts`);
  return rowsOf<{ n: number }>(result)[0]?.n ?? -1;
}

const sorted = <T>(values: T[]) => [...values].sort();

beforeAll(async () => {
  t = await createTestDatabase();
  db = t.database.db;
  organizationId = (await importOrganization(db, "retained")).organization.id;
  enabledHook = await webhook(true);
  disabledHook = await webhook(false);
});
afterAll(() => t.drop());

describe("retention of the delivery log", () => {
  // What must stay however old it is, kept for every test below.
  const kept: { deliveries: string[]; events: number[] } = { deliveries: [], events: [] };
  // Settled, but within 30 days: stays until `--older-than 0s`.
  const recent: { deliveries: string[]; events: number[] } = { deliveries: [], events: [] };

  beforeAll(async () => {
    kept.deliveries = [
      await delivery({ webhookId: disabledHook, status: "pending", createdDaysAgo: 90 }),
      await delivery({ status: "pending", createdDaysAgo: 90 }),
      await delivery({ status: "failed", createdDaysAgo: 90, settledDaysAgo: 80, passes: 2 }),
    ];
    kept.events = [await changeEvent(90, true)];
    const sharedEvent = await changeEvent(90);
    recent.deliveries = [
      await delivery({ status: "delivered", createdDaysAgo: 2, settledDaysAgo: 1, attempts: 1 }),
      // Created long ago but delivered yesterday (held until then): its age is the settled time.
      await delivery({ status: "delivered", createdDaysAgo: 60, settledDaysAgo: 1 }, sharedEvent),
    ];
    recent.events = [sharedEvent, await changeEvent(1)];
  });

  it("removes settled deliveries past the limit with their attempts, and spent events", async () => {
    const old = [
      await delivery({ status: "delivered", createdDaysAgo: 40, settledDaysAgo: 40, attempts: 2 }),
      await delivery({ status: "exhausted", createdDaysAgo: 50, settledDaysAgo: 35, attempts: 1 }),
      await delivery({ status: "delivered", createdDaysAgo: 45, settledDaysAgo: 44 }),
    ];
    const spentEvent = await changeEvent(40);
    const attemptsBefore = await attemptCount();

    // A batch of 2 makes the run take several batches of each kind.
    expect(await runRetention(t.database, settings)).toEqual({
      deliveries: 3,
      attempts: 3,
      events: 4,
    });
    expect(await existingDeliveries(old)).toEqual([]);
    expect(await existingEvents([spentEvent])).toEqual([]);
    expect(await attemptCount()).toBe(attemptsBefore - 3);
    expect(await existingDeliveries([...kept.deliveries, ...recent.deliveries])).toEqual(
      sorted([...kept.deliveries, ...recent.deliveries]),
    );
    expect(await existingEvents([...kept.events, ...recent.events])).toEqual(
      [...kept.events, ...recent.events].sort((a, b) => a - b),
    );
  });

  it("does nothing while another run holds the lock", async () => {
    await delivery({ status: "delivered", createdDaysAgo: 40, settledDaysAgo: 40 });
    const refused = await t.database.whileLocked(RETENTION_LOCK_KEY, async () => ({
      direct: await runRetention(t.database, settings),
      cli: await runCli(["retention", "run", "--json"], { DATABASE_URL: t.url }),
    }));
    expect(refused?.direct).toBeNull();
    expect(refused?.cli.code).toBe(1);
    expect(refused?.cli.stdout).toBe("");
    expect(refused?.cli.stderr).toContain("already running");
    expect(await runRetention(t.database, settings)).toEqual({
      deliveries: 1,
      attempts: 0,
      events: 1,
    });
  });

  it("svc retention run --older-than 0s removes every settled row and nothing else", async () => {
    const res = await runCli(["retention", "run", "--older-than", "0s", "--json"], {
      DATABASE_URL: t.url,
    });
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toStrictEqual({ deliveries: 2, attempts: 1, events: 3 });
    expect(await existingDeliveries(recent.deliveries)).toEqual([]);
    expect(await existingEvents(recent.events)).toEqual([]);
    expect(await existingDeliveries(kept.deliveries)).toEqual(sorted(kept.deliveries));
    expect(await existingEvents(kept.events)).toEqual(kept.events);
  });

  it("svc retention run prints what it removed, by kind", async () => {
    await delivery({ status: "exhausted", createdDaysAgo: 40, settledDaysAgo: 31, attempts: 2 });
    const res = await runCli(["retention", "run"], { DATABASE_URL: t.url });
    expect(res.code).toBe(0);
    expect(res.stdout).toBe("Removed 1 deliveries\nRemoved 2 attempts\nRemoved 1 change events\n");
  });

  it("refuses a bad --older-than, naming the option", async () => {
    const res = await runCli(["retention", "run", "--older-than", "soon"], {
      DATABASE_URL: t.url,
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("--older-than must be");
  });
});
