import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, webhookDeliveries, webhooks } from "../../src/db/schema/index.js";
import { listWebhooks } from "../../src/webhooks/service.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

const COOLDOWN_SECONDS = 3;

let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  // One attempt at a time, so arrivals keep the order they were queued in.
  p = await startPipeline({
    WORKER_CONCURRENCY: "1",
    WEBHOOK_BREAKER_COOLDOWN_SECONDS: String(COOLDOWN_SECONDS),
    WEBHOOK_RECOVERY_INTERVAL_MS: "500",
  });
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});

const targetsAt = (path: string) =>
  receiver.on(path).map((request) => JSON.parse(request.rawBody.toString()).target_id as string);

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
    expect(targetsAt(path).slice(10)).toEqual([waiting[0]]);
    receiver.respond(path, { status: 200 });

    // The next probe succeeds: the breaker closes and the rest goes out in event order.
    await eventually(() => targetsAt(path).length === 13, 30_000);
    expect(targetsAt(path).slice(11)).toEqual(waiting.slice(1));
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
