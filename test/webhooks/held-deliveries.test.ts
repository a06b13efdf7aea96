import { Queue } from "bullmq";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { overdueDeliveries } from "../../src/webhooks/retry-pass.js";
import { listWebhooks, setWebhookEnabled } from "../../src/webhooks/service.js";
import { runCli } from "../support/cli.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  // One attempt at a time, so arrivals keep the order they were queued in.
  p = await startPipeline({ WORKER_CONCURRENCY: "1" });
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await p.close();
  await receiver.stop();
});

const deliveriesOf = (webhookId: string) =>
  p.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.webhookId, webhookId));

describe("a disabled webhook", () => {
  it("holds every event written while it is off and sends them all, in order, once enabled", async () => {
    const { ws, webhook, createTask } = await workspaceWithWebhook(p, receiver, "held", "/held");
    await setWebhookEnabled(p.db, systemAudit, { id: webhook.id, enabled: false });
    const taskIds: string[] = [];
    for (let i = 0; i < 4; i++) taskIds.push(await createTask(`While disabled ${i}`));

    const held = await eventually(async () => {
      const rows = await deliveriesOf(webhook.id);
      return rows.length === 4 ? rows : null;
    });
    expect(held.every((row) => row.status === "pending" && row.attempts === 0)).toBe(true);
    const [listed] = await listWebhooks(p.db, ws.organization.id);
    expect(listed).toMatchObject({ enabled: false, heldDeliveries: 4, exhaustedDeliveries: 0 });
    // Held, not sent: the relay queued no job for them, and the recovery of lost jobs would
    // not pick them up however late they were.
    const queue = new Queue("workspace", {
      connection: { url: TEST_REDIS_URL },
      prefix: p.queuePrefix,
    });
    try {
      const jobIds = (await queue.getJobs()).map((job) => job.id ?? "");
      for (const row of held) {
        expect(jobIds.filter((jobId) => jobId.includes(row.id))).toEqual([]);
      }
    } finally {
      await queue.close();
    }
    const overdue = await overdueDeliveries(p.db, { ...p.config.webhooks, overdueAfterMs: 0 });
    expect(overdue.filter(({ id }) => held.some((row) => row.id === id))).toEqual([]);
    expect(receiver.on("/held")).toHaveLength(0);

    await setWebhookEnabled(p.db, systemAudit, { id: webhook.id, enabled: true });
    const arrived = await eventually(() => {
      const targets = receiver.targetIds("/held");
      return targets.length === 4 ? targets : null;
    });
    expect(arrived).toEqual(taskIds);
    const [after] = await listWebhooks(p.db, ws.organization.id);
    expect(after).toMatchObject({ enabled: true, heldDeliveries: 0 });
    // The receiver answers before the worker records the attempt: wait for the records.
    await eventually(async () =>
      (await deliveriesOf(webhook.id)).every((row) => row.status === "delivered"),
    );
  });
});

describe("exhausted deliveries", () => {
  it("are counted, and taken back by svc webhook retry-failed --include-exhausted and redeliver", async () => {
    const { ws, webhook, createTask } = await workspaceWithWebhook(
      p,
      receiver,
      "exhausted",
      "/exhausted",
    );
    await createTask("Given up on");
    const [delivery] = await eventually(async () => {
      const rows = await deliveriesOf(webhook.id);
      return rows.length === 1 && rows[0]?.status === "delivered" ? rows : null;
    });
    // As if every daily pass had failed to reach the receiver.
    await p.db
      .update(webhookDeliveries)
      .set({ status: "exhausted", passes: p.config.webhooks.retryPasses })
      .where(eq(webhookDeliveries.id, delivery?.id as string));
    const env = { DATABASE_URL: p.config.databaseUrl ?? "" };
    const listed = await runCli(["webhook", "list", "--org", "exhausted", "--json"], env);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: webhook.id, heldDeliveries: 0, exhaustedDeliveries: 1 }),
    ]);
    expect((await listWebhooks(p.db, ws.organization.id))[0]?.exhaustedDeliveries).toBe(1);

    const plainPass = await runCli(["webhook", "retry-failed", "--json"], env);
    expect(JSON.parse(plainPass.stdout)).toEqual([]);
    const revived = await runCli(["webhook", "retry-failed", "--include-exhausted", "--json"], env);
    expect(JSON.parse(revived.stdout)).toEqual([
      expect.objectContaining({ id: delivery?.id, status: "delivered" }),
    ]);
    expect(receiver.on("/exhausted")).toHaveLength(2);

    // One at a time: svc webhook redeliver sends an exhausted delivery again too.
    await p.db
      .update(webhookDeliveries)
      .set({ status: "exhausted" })
      .where(eq(webhookDeliveries.id, delivery?.id as string));
    const redelivered = await runCli(
      ["webhook", "redeliver", "--delivery", delivery?.id as string, "--json"],
      env,
    );
    expect(JSON.parse(redelivered.stdout)).toMatchObject({ id: delivery?.id, status: "delivered" });
    expect(receiver.on("/exhausted")).toHaveLength(3);
  });
});
