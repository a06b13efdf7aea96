import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { changeEvents, webhookDeliveries } from "../../src/db/schema/index.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await new Receiver().start();
  p = await startPipeline({ RETENTION_INTERVAL_MS: "200" }, { inProcessQueue: true });
});
afterAll(async () => {
  await p.close();
  await receiver.stop();
});

it("the worker's scheduled retention removes deliveries settled before the limit", async () => {
  const { webhook, createTask } = await workspaceWithWebhook(p, receiver, "scheduled", "/hook");
  await createTask("Old news");
  const delivered = await eventually(async () => {
    const rows = await p.db
      .select({ id: webhookDeliveries.id, eventId: webhookDeliveries.changeEventId })
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.webhookId, webhook.id));
    return rows.length === 1 ? rows[0] : null;
  });
  await eventually(async () => {
    const [row] = await p.db
      .select({ status: webhookDeliveries.status })
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.id, delivered.id));
    return row?.status === "delivered";
  });
  await p.db
    .update(webhookDeliveries)
    .set({ deliveredAt: sql`now() - interval '31 days'` })
    .where(eq(webhookDeliveries.id, delivered.id));
  await p.db
    .update(changeEvents)
    .set({ occurredAt: sql`now() - interval '31 days'` })
    .where(eq(changeEvents.id, delivered.eventId));
  await eventually(async () => {
    const rows = await p.db
      .select({ id: changeEvents.id })
      .from(changeEvents)
      .where(eq(changeEvents.id, delivered.eventId));
    return rows.length === 0;
  });
  const left = await p.db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.id, delivered.id));
  expect(left).toEqual([]);
});
