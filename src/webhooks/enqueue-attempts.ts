import type { Db } from "../db/client.js";
import type { DeliveryTrigger, WorkspaceJobs } from "../queue/jobs.js";
import type { JobQueue } from "../queue/queue.js";
import type { WebhookLog } from "./delivery.js";
import type { ClaimedRetry } from "./retry-pass.js";
import { createPingDelivery, type PingInput } from "./service.js";

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

/** What the retry pass does with each batch it claims when a worker sends them: queue them. */
export function enqueueClaimedRetries(
  queue: JobQueue<WorkspaceJobs>,
): (batch: ClaimedRetry[]) => Promise<void> {
  return (batch) =>
    enqueueAttempts(
      queue,
      "pass",
      batch.map(({ id, passes }) => ({ deliveryId: id, jobKey: `p${passes}` })),
    );
}

/**
 * The ping: its synthetic delivery is recorded, then queued. If the queue refuses it now, the
 * delivery row is still the record and the worker's recovery loop sends it within minutes.
 */
export async function queuePing(
  runtime: { db: Db; queue: JobQueue<WorkspaceJobs>; logger: WebhookLog },
  input: PingInput,
): Promise<void> {
  const { deliveryId } = await createPingDelivery(runtime.db, input);
  await enqueueAttempt(runtime.queue, deliveryId, "scheduled", { jobKey: "a0" }).catch(
    (err: unknown) =>
      runtime.logger.warn({ err, deliveryId }, "ping left for recovery: the queue refused it"),
  );
}
