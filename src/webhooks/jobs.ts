import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import type { DeliveryTrigger, WorkspaceJobs } from "../queue/jobs.js";
import type { JobHandlers, JobQueue } from "../queue/queue.js";
import { attemptDelivery, type WebhookLog } from "./delivery.js";
import { runRetryPass } from "./retry-pass.js";
import { createPingDelivery } from "./service.js";

export type WebhookRuntime = {
  db: Db;
  config: Config;
  logger: WebhookLog;
  queue: JobQueue<WorkspaceJobs>;
};

type QueuedAttempt = { deliveryId: string; jobKey: string; delayMs?: number };

/**
 * Queues attempts of one trigger in one round trip. The job id is derived from the delivery's
 * state so a duplicate request for the same attempt is dropped by the queue (BullMQ ids may not
 * contain ':').
 */
export async function enqueueAttempts(
  queue: JobQueue<WorkspaceJobs>,
  trigger: DeliveryTrigger,
  attempts: QueuedAttempt[],
): Promise<void> {
  await queue.enqueueMany(
    "deliverWebhook",
    attempts.map(({ deliveryId, jobKey, delayMs }) => ({
      payload: { deliveryId, trigger },
      options: { jobId: `delivery-${deliveryId}-${jobKey}`, delayMs },
    })),
  );
}

export function enqueueAttempt(
  queue: JobQueue<WorkspaceJobs>,
  deliveryId: string,
  trigger: DeliveryTrigger,
  options: { jobKey: string; delayMs?: number },
): Promise<void> {
  return enqueueAttempts(queue, trigger, [{ deliveryId, ...options }]);
}

/**
 * Runs the daily pass (or, with an organisation, an admin's "retry failed deliveries now"):
 * claims in Postgres a batch at a time, and queues each batch's jobs in one round trip.
 */
export async function queueRetryPass(
  runtime: WebhookRuntime,
  organizationId?: string,
): Promise<number> {
  const queued = await runRetryPass(
    runtime.db,
    runtime.config.webhooks.retryPasses,
    (batch) =>
      enqueueAttempts(
        runtime.queue,
        "pass",
        batch.map(({ id, passes }) => ({ deliveryId: id, jobKey: `p${passes}` })),
      ),
    { organizationId },
  );
  runtime.logger.info({ deliveries: queued }, "webhook retry pass queued");
  return queued;
}

/**
 * The ping: its synthetic delivery is recorded, then queued. If the queue refuses it now, the
 * delivery row is still the record and the worker's recovery loop sends it within minutes.
 */
export async function queuePing(
  runtime: Pick<WebhookRuntime, "db" | "queue" | "logger">,
  input: { organizationId: string; webhookId: string; actorId: string | null },
): Promise<void> {
  const { deliveryId } = await createPingDelivery(runtime.db, input);
  await enqueueAttempt(runtime.queue, deliveryId, "scheduled", { jobKey: "a0" }).catch(
    (err: unknown) =>
      runtime.logger.warn({ err, deliveryId }, "ping left for recovery: the queue refused it"),
  );
}

export function webhookJobHandlers(runtime: WebhookRuntime): JobHandlers<WorkspaceJobs> {
  return {
    deliverWebhook: async ({ deliveryId, trigger }) => {
      const report = await attemptDelivery(runtime, deliveryId, trigger);
      if (report?.retryAt) {
        await enqueueAttempt(runtime.queue, deliveryId, "scheduled", {
          jobKey: `a${report.attempts}`,
          delayMs: Math.max(0, report.retryAt.getTime() - Date.now()),
        });
      }
    },
    runRetryPass: async () => {
      await queueRetryPass(runtime);
    },
  };
}
