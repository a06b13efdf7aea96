import type { Runtime } from "./runtime.js";
import { webhookJobHandlers } from "./webhooks/jobs.js";
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
  await runtime.queue.startWorker(webhookJobHandlers(webhookRuntime), {
    concurrency: runtime.config.workerConcurrency,
  });
  await runtime.queue.schedule("runRetryPass", runtime.config.webhooks.retryCron, {});
  const stopLoops = await startWebhookLoops(webhookRuntime, runtime.database);
  runtime.logger.info("worker started");
  return stopLoops;
}
