import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import type { DeliveryTrigger, WorkspaceJobs } from "../queue/jobs.js";
import type { JobHandlers, JobQueue } from "../queue/queue.js";
import { createCircuitBreakers } from "./circuit-breaker.js";
import { attemptDelivery, dueDelivery, type WebhookLog } from "./delivery.js";
import { createDeliveryDispatcher } from "./dispatcher.js";
import { dueDeliveriesOf } from "./relay.js";
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
    runtime.config.webhooks,
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

/** The worker's delivery machinery: its job handlers, and the breakers' probe for the loops. */
export type DeliveryWorker = {
  handlers: JobHandlers<WorkspaceJobs>;
  probeBreakers(): Promise<void>;
  /** Waits for the attempts in flight; what waited in memory stays due in Postgres. */
  close(): Promise<void>;
};

/**
 * A delivery job only says "this delivery is due": its handler hands it to the dispatcher and
 * returns, so no queue slot waits on a receiver. The dispatcher runs the attempts fairly, and
 * each outcome feeds the webhook's circuit breaker.
 */
export function createDeliveryWorker(runtime: WebhookRuntime): DeliveryWorker {
  const { config, logger } = runtime;
  const attempt = async (deliveryId: string, trigger: DeliveryTrigger) => {
    const report = await attemptDelivery(runtime, deliveryId, trigger);
    if (report?.retryAt) {
      await enqueueAttempt(runtime.queue, deliveryId, "scheduled", {
        jobKey: `a${report.attempts}`,
        delayMs: Math.max(0, report.retryAt.getTime() - Date.now()),
      }).catch((err: unknown) =>
        logger.warn({ err, deliveryId }, "retry left for recovery: the queue refused it"),
      );
    }
    return report;
  };
  const breakers = createCircuitBreakers({
    db: runtime.db,
    config,
    logger,
    onOpen: (webhookId) => dispatcher.evict(webhookId),
    probe: async (deliveryId) => {
      const report = await attempt(deliveryId, "probe");
      return report === null ? null : { ok: report.outcome.ok };
    },
    release: async (webhookId) => {
      const due = await dueDeliveriesOf(runtime.db, webhookId);
      const stamp = Date.now();
      await enqueueAttempts(
        runtime.queue,
        "scheduled",
        due.map(({ id, attempts }) => ({ deliveryId: id, jobKey: `a${attempts}-c${stamp}` })),
      );
    },
  });
  const dispatcher = createDeliveryDispatcher({
    limits: { concurrency: config.workerConcurrency, ...config.webhooks.dispatch },
    logger,
    attempt: async ({ deliveryId, trigger, webhookId }) => {
      const report = await attempt(deliveryId, trigger);
      if (report !== null && trigger !== "manual") {
        await breakers.record(webhookId, report.outcome.ok);
      }
    },
    refill: async (webhookId, organizationId, limit) =>
      (await dueDeliveriesOf(runtime.db, webhookId, limit)).map(({ id }) => ({
        deliveryId: id,
        trigger: "scheduled" as const,
        webhookId,
        organizationId,
      })),
  });
  return {
    handlers: {
      deliverWebhook: async ({ deliveryId, trigger }) => {
        const target = await dueDelivery(runtime.db, deliveryId, trigger);
        if (target === null) return;
        dispatcher.submit({ deliveryId, trigger, ...target });
      },
      runRetryPass: async () => {
        await queueRetryPass(runtime);
      },
    },
    probeBreakers: () => breakers.probeDue(),
    async close() {
      breakers.close();
      await dispatcher.close();
    },
  };
}
