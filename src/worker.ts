import type { Runtime } from "./runtime.js";
import { createDeliveryWorker } from "./webhooks/jobs.js";
import { startWebhookLoops } from "./webhooks/relay-and-recovery-loops.js";

/**
 * The webhook worker: queue consumer with bounded concurrency, the daily retry pass on its
 * cron, and the relay and recovery loops. Returns the function that stops it gracefully.
 */
export async function startWorker(
  runtime: Pick<Runtime, "config" | "database" | "logger" | "queue">,
): Promise<() => Promise<void>> {
  const webhookRuntime = {
    db: runtime.database.db,
    config: runtime.config,
    logger: runtime.logger,
    queue: runtime.queue,
  };
  const deliveries = createDeliveryWorker(webhookRuntime);
  await runtime.queue.startWorker(deliveries.handlers, {
    concurrency: runtime.config.workerConcurrency,
  });
  await runtime.queue.schedule("runRetryPass", runtime.config.webhooks.retryCron, {});
  const stopLoops = await startWebhookLoops(webhookRuntime, runtime.database, deliveries);
  runtime.logger.info("worker started");
  return async () => {
    await stopLoops();
    await deliveries.close();
  };
}
