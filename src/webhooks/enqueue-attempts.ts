import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import type { DeliveryTrigger, WorkspaceJobs } from "../queue/jobs.js";
import type { JobQueue } from "../queue/queue.js";
import type { WebhookLog } from "./delivery.js";
import {
  type ClaimedRetry,
  type RetryCursor,
  type RetryScope,
  runRetryPassWithin,
} from "./retry-pass.js";
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

/**
 * A retry pass that queues what it claims, no more than the queue's window holds
 * (WEBHOOK_QUEUE_WINDOW): past it, deliveries wait in Postgres, and a delayed job goes on from
 * where this stopped, so no worker slot or request waits for room. Returns how many it queued.
 */
export async function queueRetryPass(
  runtime: { db: Db; config: Config; queue: JobQueue<WorkspaceJobs> },
  scope: RetryScope,
  after: RetryCursor | null = null,
): Promise<{ claimed: number; full: boolean }> {
  const { db, config, queue } = runtime;
  const room = async () => config.webhooks.queueWindow - (await queue.counts()).waiting;
  const queueBatch = (batch: ClaimedRetry[]) =>
    enqueueAttempts(
      queue,
      "pass",
      batch.map(({ id, passes }) => ({ deliveryId: id, jobKey: `p${passes}` })),
    );
  const pass = await runRetryPassWithin(db, config.webhooks, queueBatch, { after, room }, scope);
  if (pass.full) {
    const cursor =
      pass.after === null
        ? {}
        : { afterEventId: pass.after.changeEventId, afterWebhookId: pass.after.webhookId };
    const from = pass.after === null ? "start" : `${cursor.afterEventId}-${cursor.afterWebhookId}`;
    await queue.enqueue(
      "runRetryPass",
      { ...scope, ...cursor },
      {
        jobId: `retry-pass-after-${from}-${Date.now()}`,
        delayMs: config.webhooks.queueWindowWaitMs,
      },
    );
  }
  return { claimed: pass.claimed, full: pass.full };
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
