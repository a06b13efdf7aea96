import { pruneAuditLog } from "../modules/audit/service.js";
import type { DeliveryWorker, WebhookRuntime } from "./delivery-worker.js";
import { enqueueAttempts } from "./enqueue-attempts.js";
import { every } from "./every.js";
import { overdueDeliveries } from "./retry-pass.js";

/**
 * Re-queues deliveries whose job was lost or that the dispatcher had no room for; the round's
 * number in the job id lets them be queued anew. Probes the breakers whose probe was lost too.
 */
async function recoverOverdueDeliveries(
  runtime: WebhookRuntime,
  deliveries: DeliveryWorker,
): Promise<number> {
  const intervalMs = runtime.config.webhooks.recoveryIntervalMs;
  const overdue = await overdueDeliveries(runtime.db, runtime.config.webhooks);
  const round = Math.floor(Date.now() / intervalMs);
  await enqueueAttempts(
    runtime.queue,
    "scheduled",
    overdue.map(({ id, attempts }) => ({ deliveryId: id, jobKey: `a${attempts}-r${round}` })),
  );
  await deliveries.probeBreakers();
  return overdue.length;
}

/** Each round also deletes the audit entries past AUDIT_LOG_RETENTION_DAYS, a batch at a time. */
async function recoverAndPrune(runtime: WebhookRuntime, deliveries: DeliveryWorker) {
  await pruneAuditLog(runtime.db, runtime.config.auditLog);
  await recoverOverdueDeliveries(runtime, deliveries);
}

/**
 * The recovery of lost jobs and probes, and the audit log's pruning, every
 * WEBHOOK_RECOVERY_INTERVAL_MS. Several workers may
 * run it at once. Returns the function that stops it.
 */
export function startRecoveryLoop(
  runtime: WebhookRuntime,
  deliveries: DeliveryWorker,
): () => Promise<void> {
  const recovery = every(
    runtime.config.webhooks.recoveryIntervalMs,
    () => recoverAndPrune(runtime, deliveries),
    (err) => runtime.logger.error({ err, task: "recovery" }, "webhook loop failed"),
  );
  return () => recovery.stop();
}
