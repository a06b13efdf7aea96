import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import type { MetricsRecorder } from "../metrics/recorder.js";
import type { DeliveryTrigger, WorkspaceJobs } from "../queue/jobs.js";
import type { JobHandlers, JobQueue } from "../queue/queue.js";
import type { Tracer } from "../tracing/tracer.js";
import { createCircuitBreakers } from "./circuit-breaker.js";
import { createDeliveryPipeline, type WebhookLog } from "./delivery.js";
import { createDeliveryDispatcher } from "./dispatcher.js";
import { enqueueAttempt, queueRetryPass } from "./enqueue-attempts.js";
import { dueDeliveriesOf, type FannedOutDelivery } from "./relay.js";

export type WebhookRuntime = {
  db: Db;
  config: Config;
  logger: WebhookLog;
  queue: JobQueue<WorkspaceJobs>;
  tracer?: Tracer;
  /** The worker's metrics: its delivery attempts and their lag. */
  metrics?: MetricsRecorder;
};

/** The worker's delivery machinery: its job handlers, and the breakers' probe for the loops. */
export type DeliveryWorker = {
  handlers: JobHandlers<WorkspaceJobs>;
  /** The relay's new deliveries, due now: straight to the dispatcher, their first attempt. */
  submitFanned(deliveries: FannedOutDelivery[]): void;
  probeBreakers(): Promise<void>;
  /** Waits for the attempts in flight, then closes the pipeline; what waited stays due in Postgres. */
  close(): Promise<void>;
};

/**
 * A delivery job only says "this delivery is due": its handler hands it to the dispatcher and
 * returns, so no queue slot waits on a receiver. The dispatcher runs the attempts fairly, and
 * each outcome feeds the webhook's circuit breaker. The worker owns the delivery pipeline.
 */
export function createDeliveryWorker(runtime: WebhookRuntime): DeliveryWorker {
  const { config, logger } = runtime;
  const pipeline = createDeliveryPipeline(runtime);
  const attempt = async (deliveryId: string, trigger: DeliveryTrigger, answered?: () => void) => {
    const report = await pipeline.attemptDelivery(deliveryId, trigger, answered);
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
    // Straight to the dispatcher, which refills from Postgres as attempts finish: the backlog
    // drains at its concurrency, not through the queue's window or the recovery loop.
    release: (webhookId, organizationId) => dispatcher.wake(webhookId, organizationId),
  });
  const dispatcher = createDeliveryDispatcher({
    limits: { concurrency: config.workerConcurrency, ...config.webhooks.dispatch },
    logger,
    attempt: async ({ deliveryId, trigger, webhookId }, answered) => {
      const report = await attempt(deliveryId, trigger, answered);
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
        const target = await pipeline.dueDelivery(deliveryId, trigger);
        if (target === null) return;
        dispatcher.submit({ deliveryId, trigger, ...target });
      },
      runRetryPass: async ({ afterEventId, afterWebhookId, ...scope }) => {
        const after =
          afterEventId === undefined || afterWebhookId === undefined
            ? null
            : { changeEventId: afterEventId, webhookId: afterWebhookId };
        const pass = await queueRetryPass(runtime, scope, after);
        logger.info({ deliveries: pass.claimed, full: pass.full }, "webhook retry pass queued");
      },
    },
    submitFanned(deliveries) {
      for (const delivery of deliveries) dispatcher.submit({ ...delivery, trigger: "scheduled" });
    },
    probeBreakers: () => breakers.probeDue(),
    async close() {
      await breakers.close();
      await dispatcher.close();
      await pipeline.close();
    },
  };
}
