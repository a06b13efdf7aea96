import type { MetricsRecorder } from "./metrics/recorder.js";
import type { Runtime } from "./runtime.js";
import { createDeliveryWorker } from "./webhooks/delivery-worker.js";
import { listenForReleasedDeliveries } from "./webhooks/held-delivery-release.js";
import { startRecoveryLoop } from "./webhooks/recovery-loop.js";
import { startRelayLoop } from "./webhooks/relay-loop.js";
import { startRetentionLoop } from "./webhooks/retention.js";

/**
 * The webhook worker: queue consumer with bounded concurrency, the daily retry pass on its
 * cron, the relay, recovery and retention loops, and the release of held deliveries. Returns the function
 * that stops it gracefully and closes what it holds.
 */
export async function startWorker(
  runtime: Pick<Runtime, "config" | "database" | "logger" | "queue"> &
    Partial<Pick<Runtime, "tracer">> & { metrics?: MetricsRecorder },
): Promise<() => Promise<void>> {
  const webhookRuntime = {
    db: runtime.database.db,
    config: runtime.config,
    logger: runtime.logger,
    queue: runtime.queue,
    tracer: runtime.tracer,
    metrics: runtime.metrics,
  };
  const deliveries = createDeliveryWorker(webhookRuntime);
  await runtime.queue.startWorker(deliveries.handlers, {
    concurrency: runtime.config.workerConcurrency,
  });
  await runtime.queue.schedule("runRetryPass", runtime.config.webhooks.retryCron, {});
  const stopRelay = await startRelayLoop(webhookRuntime, runtime.database, deliveries);
  const stopReleases = await listenForReleasedDeliveries(webhookRuntime, runtime.database);
  const stopRecovery = startRecoveryLoop(webhookRuntime, deliveries);
  const stopRetention = startRetentionLoop(webhookRuntime, runtime.database);
  runtime.logger.info("worker started");
  return async () => {
    await Promise.all([stopRelay(), stopReleases(), stopRecovery(), stopRetention()]);
    await deliveries.close();
  };
}
