import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/client.js";
import { webhooks } from "../../src/db/schema/index.js";
import {
  deliveryActivity,
  deliveryLogPage,
  type LogQuery,
} from "../../src/webhooks/delivery-log.js";
import { listWebhooks } from "../../src/webhooks/service.js";
import { importOAuthWorkspaces } from "../oauth/oauth-fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

/**
 * The webhook page's and the webhook list's reads on a webhook with 100,000 deliveries (spread
 * over 30 days, each with an attempt): every statement they send is planned with an index on
 * webhook_deliveries and webhook_attempts, never a sequential scan of either, and the log reads
 * one page of rows.
 */

const DELIVERIES = 100_000;
let testDatabase: TestDatabase;
let pool: pg.Pool;
/** The page's functions run over this handle, which records each statement with its parameters. */
let db: Db;
const statements: { sql: string; params: unknown[] }[] = [];
let webhookId: string;
let organizationId: string;
/** When the deliveries were written: the activity is counted from there, however long setup took. */
let seededAt: Date;

type PlanNode = {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
};

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/** The scans of the two tables, and the indexes used, in the plan of each recorded statement. */
async function plansOfRecorded() {
  const plans = [];
  for (const statement of statements.splice(0)) {
    const result = await pool.query(`explain (format json) ${statement.sql}`, statement.params);
    const [plan] = result.rows[0]["QUERY PLAN"] as { Plan: PlanNode }[];
    if (plan === undefined) throw new Error("no plan");
    const nodes = nodesOf(plan.Plan);
    plans.push({
      sql: statement.sql,
      scans: nodes
        .filter((node) => /^webhook_(deliveries|attempts)$/.test(node["Relation Name"] ?? ""))
        .map((node) => `${node["Node Type"]} on ${node["Relation Name"]}`),
      indexes: nodes.flatMap((node) => node["Index Name"] ?? []),
    });
  }
  return plans;
}

/** Each statement reads its table through one of the table's indexes, never a Seq Scan. */
function expectIndexed(plans: Awaited<ReturnType<typeof plansOfRecorded>>, index: RegExp) {
  expect(plans.length).toBeGreaterThan(0);
  for (const plan of plans) {
    expect(plan.scans.length, plan.sql).toBeGreaterThan(0);
    expect(
      plan.scans.filter((scan) => scan.startsWith("Seq Scan")),
      plan.sql,
    ).toEqual([]);
    expect(plan.indexes.filter((name) => index.test(name)).length, plan.sql).toBeGreaterThan(0);
  }
}

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  const setup = testDatabase.database.db;
  const { acme } = await importOAuthWorkspaces(setup);
  organizationId = acme.organization.id;
  const insertWebhook = (url: string) =>
    setup
      .insert(webhooks)
      .values({ organizationId: acme.organization.id, url, secretCiphertext: "unused" })
      .returning({ id: webhooks.id });
  const [busy] = await insertWebhook("https://busy.example/hook");
  const [quiet] = await insertWebhook("https://quiet.example/hook");
  if (busy === undefined || quiet === undefined) throw new Error("no webhook");
  webhookId = busy.id;
  pool = new pg.Pool({ connectionString: testDatabase.url, max: 2 });
  await pool.query(
    `insert into change_events (organization_id, type, action, target_kind, target_id, diff, fanned_out_at)
     select $1, case when i % 10 = 0 then 'page.updated' else 'task.created' end, 'created', 'task',
       i::text, '{"before":{},"after":{}}', now()
     from generate_series(1, $2::int) as i`,
    [acme.organization.id, DELIVERIES + 1000],
  );
  seededAt = new Date();
  // The busy webhook's 100,000 deliveries over the last 30 days, and a few for another one.
  await pool.query(
    `insert into webhook_deliveries (webhook_id, change_event_id, status, attempts, created_at)
     select case when e.id <= $3 then $1::uuid else $2::uuid end, e.id,
       (case when e.id % 50 = 0 then 'failed' when e.id % 7 = 0 then 'pending' else 'delivered' end)::delivery_status,
       1, $4::timestamptz - (e.id * interval '25 seconds')
     from change_events e`,
    [busy.id, quiet.id, DELIVERIES, seededAt],
  );
  await pool.query(
    `insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code, response_snippet)
     select id, created_at, 12, 200, 'ok' from webhook_deliveries`,
  );
  await pool.query("vacuum analyze webhook_deliveries");
  await pool.query("vacuum analyze webhook_attempts");
  await pool.query("vacuum analyze change_events");
  db = drizzle(pool, {
    casing: "snake_case",
    logger: { logQuery: (sql, params) => statements.push({ sql, params }) },
  });
}, 180_000);

afterAll(async () => {
  await pool?.end();
  await testDatabase?.drop();
});

const firstPage = (overrides: Partial<LogQuery> = {}): LogQuery => ({
  webhookId,
  status: null,
  eventType: null,
  after: null,
  limit: 25,
  ...overrides,
});

describe("the webhook page on 100,000 deliveries", () => {
  it("counts the last 24 hours and 7 days from the index", async () => {
    const activity = await deliveryActivity(db, webhookId, seededAt);
    // 25 s apart: 3,456 a day, 144 an hour; the windows end in the current hour and day.
    expect(activity.days.total).toBeGreaterThanOrEqual(6 * 3_456);
    expect(activity.hours.total).toBeGreaterThanOrEqual(23 * 144);
    expectIndexed(await plansOfRecorded(), /^webhook_deliveries_webhook/);
  });

  it("reads the log one indexed page at a time, filtered or not, in both directions", async () => {
    const page = await deliveryLogPage(db, firstPage());
    expect(page.deliveries).toHaveLength(25);
    expect(page.older).not.toBeNull();
    expect(page.newer).toBeNull();
    const older = await deliveryLogPage(
      db,
      firstPage({
        after: { direction: "older", cursor: page.older as NonNullable<typeof page.older> },
      }),
    );
    expect(older.deliveries).toHaveLength(25);
    expect(older.deliveries[0]?.createdAt.getTime()).toBeLessThanOrEqual(
      page.deliveries[24]?.createdAt.getTime() ?? 0,
    );
    const back = await deliveryLogPage(
      db,
      firstPage({
        after: { direction: "newer", cursor: older.newer as NonNullable<typeof older.newer> },
      }),
    );
    expect(back.deliveries.map((delivery) => delivery.id)).toEqual(
      page.deliveries.map((delivery) => delivery.id),
    );
    const plans = await plansOfRecorded();
    const reads = plans.filter((plan) => plan.sql.includes('from "webhook_deliveries"'));
    expect(reads.length).toBeGreaterThanOrEqual(3);
    expectIndexed(reads, /^webhook_deliveries_webhook/);
    expectIndexed(
      plans.filter((plan) => plan.sql.includes('from "webhook_attempts"')),
      /^webhook_attempts_delivery_idx$/,
    );

    for (const filters of [
      { status: "failed" as const },
      { status: "pending" as const },
      { eventType: "page.updated" },
      { status: "failed" as const, eventType: "page.updated" },
    ]) {
      const filtered = await deliveryLogPage(db, firstPage(filters));
      expect(filtered.deliveries).toHaveLength(25);
      for (const delivery of filtered.deliveries) {
        if ("status" in filters) expect(delivery.status).toBe(filters.status);
        if ("eventType" in filters) expect(delivery.event.type).toBe(filters.eventType);
      }
      const next = await deliveryLogPage(
        db,
        firstPage({
          ...filters,
          after: {
            direction: "older",
            cursor: filtered.older as NonNullable<typeof filtered.older>,
          },
        }),
      );
      expect(next.deliveries).toHaveLength(25);
      const plans = await plansOfRecorded();
      const reads = plans.filter((plan) => plan.sql.includes('from "webhook_deliveries"'));
      expect(reads).toHaveLength(2);
      expectIndexed(reads, /^webhook_deliveries_webhook/);
      expectIndexed(
        plans.filter((plan) => plan.sql.includes('from "webhook_attempts"')),
        /^webhook_attempts_delivery_idx$/,
      );
    }
  });
});

describe("the webhook list on 100,000 deliveries", () => {
  it("reads every webhook's last delivery and last day in one indexed statement", async () => {
    const listed = await listWebhooks(db, organizationId);
    const busy = listed.find((webhook) => webhook.id === webhookId);
    // The newest delivery (id 1, 25 s old) was delivered; a day holds 3,456, 1 in 50 failed.
    expect(busy?.lastDelivery).toMatchObject({ status: "delivered", statusCode: 200 });
    expect(busy?.last24Hours.failed).toBeGreaterThan(0);
    expect(busy?.last24Hours.delivered).toBeGreaterThan(40 * (busy?.last24Hours.failed ?? 0));
    const plans = await plansOfRecorded();
    expect(plans).toHaveLength(1);
    expectIndexed(plans, /^webhook_deliveries_webhook/);
    expectIndexed(plans, /^webhook_attempts_delivery_idx$/);
  });
});
