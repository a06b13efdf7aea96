import { asc, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, webhookDeliveries, webhooks } from "../../src/db/schema/index.js";
import { listWebhooks } from "../../src/webhooks/service.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

const COOLDOWN_SECONDS = 3;
const BACKLOG = 100;

let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(() => receiver.stop());

/** A pipeline for the tests of one `describe`, with these settings. */
function pipelineWith(env: Record<string, string>) {
  beforeAll(async () => {
    p = await startPipeline(env);
  });
  afterAll(() => p.close());
}

const webhookRow = async (id: string) =>
  (await p.db.select().from(webhooks).where(eq(webhooks.id, id)))[0];

/** The webhook's deliveries in event order, with the task each is about. */
const deliveriesOf = (webhookId: string) =>
  p.db
    .select({
      id: webhookDeliveries.id,
      targetId: changeEvents.targetId,
      status: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
    })
    .from(webhookDeliveries)
    .innerJoin(changeEvents, eq(changeEvents.id, webhookDeliveries.changeEventId))
    .where(eq(webhookDeliveries.webhookId, webhookId))
    .orderBy(asc(webhookDeliveries.changeEventId));

describe("the circuit breaker", () => {
  // One attempt at a time, so arrivals keep the order they were queued in.
  pipelineWith({
    WORKER_CONCURRENCY: "1",
    WEBHOOK_BREAKER_COOLDOWN_SECONDS: String(COOLDOWN_SECONDS),
    WEBHOOK_RECOVERY_INTERVAL_MS: "500",
  });

  it("pauses a failing webhook, probes it after the cooldown, and then sends what waited, in order", async () => {
    const path = "/breaker";
    receiver.respond(path, { status: 500 });
    const { ws, webhook, createTask } = await workspaceWithWebhook(p, receiver, "breaker", path);
    for (let i = 0; i < 10; i++) await createTask(`Failing ${i}`);
    const opened = await eventually(async () => {
      const row = await webhookRow(webhook.id);
      return row?.circuitOpenUntil ? row : null;
    });
    expect(opened).toMatchObject({ circuitCooldownSeconds: COOLDOWN_SECONDS, circuitFailures: 10 });
    expect(receiver.on(path)).toHaveLength(10);
    // What the admin page shows as "Paused until … after 10 failures".
    expect((await listWebhooks(p.db, ws.organization.id))[0]).toMatchObject({
      pausedUntil: opened.circuitOpenUntil?.toISOString(),
      pausedAfterFailures: 10,
    });

    // While it is open: nothing is sent, nothing is counted as an attempt.
    const waiting: string[] = [];
    for (let i = 0; i < 3; i++) waiting.push(await createTask(`Waiting ${i}`));
    const held = await eventually(async () => {
      const rows = (await deliveriesOf(webhook.id)).slice(10);
      return rows.length === 3 ? rows : null;
    });
    expect(held.map((row) => [row.targetId, row.status, row.attempts])).toEqual(
      waiting.map((id) => [id, "pending", 0]),
    );
    expect(receiver.on(path)).toHaveLength(10);

    // After the cooldown one probe, with the oldest waiting delivery; it fails: twice the cooldown.
    await eventually(async () => (await webhookRow(webhook.id))?.circuitCooldownSeconds === 6);
    expect(receiver.targetIds(path).slice(10)).toEqual([waiting[0]]);
    receiver.respond(path, { status: 200 });

    // The next probe succeeds: the breaker closes and the rest goes out in event order.
    await eventually(() => receiver.targetIds(path).length === 13, 30_000);
    expect(receiver.targetIds(path).slice(11)).toEqual(waiting.slice(1));
    const closed = await eventually(async () => {
      const row = await webhookRow(webhook.id);
      return row?.circuitOpenUntil === null ? row : null;
    });
    expect(closed).toMatchObject({ circuitCooldownSeconds: null, circuitFailures: null });
    const after = await eventually(async () => {
      const rows = (await deliveriesOf(webhook.id)).slice(10);
      return rows.filter((row) => row.status === "delivered").length === 2 ? rows : null;
    });
    // The failed probe was a real attempt; the others were attempted exactly once.
    expect(after.map((row) => [row.status, row.attempts])).toEqual([
      ["failed", 1],
      ["delivered", 1],
      ["delivered", 1],
    ]);
  }, 60_000);
});

describe("a breaker that closes", () => {
  pipelineWith({
    WEBHOOK_BREAKER_COOLDOWN_SECONDS: "1",
    // One attempt of the webhook at a time, so arrivals show the order they were sent in.
    WEBHOOK_MAX_IN_FLIGHT: "1",
    WEBHOOK_MAX_PENDING_PER_WEBHOOK: "8",
    // A queue window far smaller than the backlog, and a recovery loop that never runs here:
    // what the receiver gets after the breaker closes comes from the dispatcher's own refills.
    WEBHOOK_QUEUE_WINDOW: "5",
    WEBHOOK_RECOVERY_INTERVAL_MS: "600000",
  });

  it("sends the whole backlog that waited behind it, then what came later, in event order, however small the queue window", async () => {
    const path = "/backlog";
    receiver.respond(path, { status: 500 });
    const { ws, webhook, createTask } = await workspaceWithWebhook(p, receiver, "release", path);
    for (let i = 0; i < 10; i++) await createTask(`Failing ${i}`);
    await eventually(async () => {
      const [row] = await p.db.select().from(webhooks).where(eq(webhooks.id, webhook.id));
      return row?.circuitOpenUntil != null;
    });

    // The backlog that built up while the receiver was down, due now, with later events.
    await p.db.execute(sql`
      with events as (
        insert into change_events
          (organization_id, type, action, target_kind, target_id, diff, fanned_out_at)
        select ${ws.organization.id}, 'task.created', 'created', 'task', 'W-' || n,
          '{"before":{},"after":{}}', now()
        from generate_series(1, ${BACKLOG}) n
        order by n
        returning id
      )
      insert into webhook_deliveries (webhook_id, change_event_id, next_attempt_at)
      select ${webhook.id}, events.id, now() from events`);
    receiver.respond(path, { status: 200 });

    // Changes recorded while the backlog drains queue jobs of their own: they go after it.
    await eventually(() => receiver.targetIds(path).length > 12, 30_000);
    const later: string[] = [];
    for (let i = 0; i < 5; i++) later.push(await createTask(`Later ${i}`));
    const backlog = Array.from({ length: BACKLOG }, (_, i) => `W-${i + 1}`);
    await eventually(() => receiver.targetIds(path).length === 10 + BACKLOG + 5, 30_000);
    expect(receiver.targetIds(path).slice(10)).toEqual([...backlog, ...later]);
  }, 60_000);
});
