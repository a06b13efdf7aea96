import { randomBytes } from "node:crypto";
import { Queue } from "bullmq";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../src/db/client.js";
import { createBullmqQueue } from "../../src/queue/bullmq-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import type { JobQueue } from "../../src/queue/queue.js";
import { createDeliveryWorker, type DeliveryWorker } from "../../src/webhooks/delivery-worker.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { importOrganization } from "../support/fixtures.js";

const WINDOW = 50;
const FAILED = 200;

const prefix = `test-${randomBytes(6).toString("hex")}`;
let t: TestApp;
let queue: JobQueue<WorkspaceJobs>;
let deliveries: DeliveryWorker;

/** Deliveries of the pass counted by how many passes they spent. */
async function passesSpent(): Promise<Record<number, number>> {
  const result = await t.db.execute(sql`
    select passes, count(*)::int as n from webhook_deliveries group by passes`);
  return Object.fromEntries(
    rowsOf<{ passes: number; n: number }>(result).map((r) => [r.passes, r.n]),
  );
}

/** A webhook of the organisation with `count` failed deliveries, one per event. */
async function seedFailedDeliveries(organizationId: string, count: number) {
  await t.db.execute(sql`
    with hook as (
      insert into webhooks (organization_id, url, secret_ciphertext, enabled)
      values (${organizationId}, 'https://receiver.example/hook', 'unused', true)
      returning id
    ), events as (
      insert into change_events
        (organization_id, type, action, target_kind, target_id, diff, fanned_out_at)
      select ${organizationId}, 'task.created', 'created', 'task', 'T-' || n,
        '{"before":{},"after":{}}', now()
      from generate_series(1, ${count}) n
      returning id
    )
    insert into webhook_deliveries (webhook_id, change_event_id, status, attempts, last_attempt_at)
    select hook.id, events.id, 'failed', 1, now() from hook, events`);
}

// The worker's daily pass over many failed deliveries: they wait in Postgres and the queue holds
// a window of them. Nothing consumes the queue here, so what it holds is what the pass put in.
describe("the daily pass feeds the queue a bounded window", () => {
  beforeAll(async () => {
    const logger = pino({ level: "silent" });
    queue = createBullmqQueue<WorkspaceJobs>({ redisUrl: TEST_REDIS_URL, prefix, logger });
    t = await createTestApp(
      {
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: prefix,
        WEBHOOK_QUEUE_WINDOW: String(WINDOW),
        WEBHOOK_RETRY_PASS_BATCH_SIZE: "20",
        WEBHOOK_QUEUE_WINDOW_WAIT_MS: "60000",
      },
      { queue },
    );
    const { organization } = await importOrganization(t.db, "window");
    await seedFailedDeliveries(organization.id, FAILED);
    deliveries = createDeliveryWorker({ db: t.db, config: t.config, logger, queue });
  });

  afterAll(async () => {
    await deliveries?.close();
    await queue?.close();
    await t?.close();
  });

  it("queues no more than the window, leaves the rest failed in Postgres and goes on later", async () => {
    await deliveries.handlers.runRetryPass({});
    const counts = await queue.counts();
    expect(counts.waiting).toBe(WINDOW);
    expect(await passesSpent()).toEqual({ 0: FAILED - WINDOW, 1: WINDOW });
    // In event order: the window holds the oldest events' deliveries, whatever their ids.
    const claimed = await t.db.execute(sql`
      select bool_and(claimed.change_event_id < waiting.change_event_id) as oldest_first
      from webhook_deliveries claimed, webhook_deliveries waiting
      where claimed.passes = 1 and waiting.passes = 0`);
    expect(rowsOf<{ oldest_first: boolean }>(claimed)[0]?.oldest_first).toBe(true);
    // The rest of the pass is one delayed job, not a worker slot waiting for room.
    expect(counts.delayed).toBe(1);

    // Still full: the next round claims nothing and queues itself again.
    await deliveries.handlers.runRetryPass({});
    expect((await queue.counts()).waiting).toBe(WINDOW);
    expect(await passesSpent()).toEqual({ 0: FAILED - WINDOW, 1: WINDOW });
  });

  it("holds the admin's button to the same window, and the rest of its pass to its organisation", async () => {
    const { acme } = await importOAuthWorkspaces(t.db);
    await seedFailedDeliveries(acme.organization.id, 10);
    const admin = new InjectSession(t.app);
    await admin.signIn("admin@acme.example", PASSWORD);
    const page = await admin.get("/admin/acme/webhooks");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;

    // The queue is still full: nothing is claimed now, and a delayed job goes on later.
    const delayedBefore = (await queue.counts()).delayed;
    const res = await admin.post("/admin/acme/webhooks/retry-failed", { _csrf: csrf });
    const list = await admin.get(res.headers.location as string);
    expect(list.body).toContain(
      "0 failed deliveries queued for another attempt; the rest follow as the queue has room.",
    );
    expect((await queue.counts()).waiting).toBe(WINDOW);
    expect((await queue.counts()).delayed).toBe(delayedBefore + 1);

    // That job, run with room in the queue, takes acme's deliveries only.
    const bull = new Queue("workspace", { connection: { url: TEST_REDIS_URL }, prefix });
    await bull.drain();
    await bull.close();
    await deliveries.handlers.runRetryPass({ organizationId: acme.organization.id });
    expect((await queue.counts()).waiting).toBe(10);
    expect(await passesSpent()).toEqual({ 0: FAILED - WINDOW, 1: WINDOW + 10 });
  });
});
