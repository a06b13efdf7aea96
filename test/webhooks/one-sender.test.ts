import { eq } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { createDeliveryPipeline, type DeliveryPipeline } from "../../src/webhooks/delivery.js";
import { createPingDelivery } from "../../src/webhooks/service.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { roverWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

// Two workers, each with its own pipeline, handed the same due delivery at once (a breaker's
// release racing a quick retry's job): the receiver must get it once, and one attempt recorded.

let t: TestApp;
let receiver: Receiver;
let workers: DeliveryPipeline[];
let webhookId: string;
let organizationId: string;

beforeAll(async () => {
  [t, receiver] = await Promise.all([createTestApp(), new Receiver().start()]);
  const { ws, webhook } = await roverWithWebhook(
    t.db,
    t.config.secretKey,
    receiver,
    "one-sender",
    "/hook",
  );
  webhookId = webhook.id;
  organizationId = ws.organization.id;
  const logger = pino({ level: "silent" });
  workers = [0, 1].map(() => createDeliveryPipeline({ db: t.db, config: t.config, logger }));
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.close()));
  await receiver.stop();
  await t.close();
});

async function dueDelivery(): Promise<string> {
  const { deliveryId } = await createPingDelivery(t.db, {
    organizationId,
    webhookId,
    actorId: null,
  });
  return deliveryId;
}

describe("a delivery handed to two workers at once", () => {
  it.each(["scheduled", "pass"] as const)(
    "is sent once when both attempt it (%s)",
    async (trigger) => {
      const deliveryId = await dueDelivery();
      // What the daily pass claims: a failed delivery, due now.
      if (trigger === "pass") {
        await t.db
          .update(webhookDeliveries)
          .set({ status: "failed", attempts: 1, passes: 1 })
          .where(eq(webhookDeliveries.id, deliveryId));
      }
      const before = receiver.on("/hook").length;
      const reports = await Promise.all(
        workers.map((worker) => worker.attemptDelivery(deliveryId, trigger)),
      );
      expect(reports.filter((report) => report !== null)).toHaveLength(1);
      expect(receiver.on("/hook").length - before).toBe(1);
      const [row] = await t.db
        .select()
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.id, deliveryId));
      expect(row?.attempts).toBe(trigger === "pass" ? 2 : 1);
    },
  );

  it("still lets an admin's redelivery through while another attempt holds it", async () => {
    const deliveryId = await dueDelivery();
    const before = receiver.on("/hook").length;
    const [first] = workers;
    await first?.attemptDelivery(deliveryId, "scheduled");
    const manual = await workers[1]?.attemptDelivery(deliveryId, "manual");
    expect(manual).not.toBeNull();
    expect(receiver.on("/hook").length - before).toBe(2);
  });
});
