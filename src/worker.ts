import type { Runtime } from "./runtime.js";
import { startWebhookLoops } from "./webhooks/dispatcher.js";
import { type WebhookJobs, webhookJobHandlers } from "./webhooks/jobs.js";

/** Every job the worker runs, by name; payloads carry ids only. */
export type WorkspaceJobs = WebhookJobs;

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
  const stopLoops = startWebhookLoops(webhookRuntime);
  runtime.logger.info("worker started");
  return stopLoops;
}
