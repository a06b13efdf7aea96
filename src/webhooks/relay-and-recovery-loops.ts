import { enqueueAttempt, type WebhookRuntime } from "./jobs.js";
import { fanOutChangeEvents } from "./relay.js";
import { overdueDeliveries } from "./retry-pass.js";

const RECOVERY_INTERVAL_MS = 60_000;

/** Fans out every pending event, then queues the first attempt of each new delivery. */
async function relayOnce(runtime: WebhookRuntime): Promise<number> {
  let fannedOut = 0;
  for (;;) {
    const { events, deliveryIds } = await fanOutChangeEvents(runtime.db);
    for (const deliveryId of deliveryIds) {
      await enqueueAttempt(runtime.queue, deliveryId, "scheduled", { jobKey: "a0" });
    }
    fannedOut += events;
    if (events === 0) return fannedOut;
  }
}

/** Re-queues deliveries whose job was lost; the minute in the job id lets it be queued anew. */
async function recoverOverdueDeliveries(runtime: WebhookRuntime): Promise<number> {
  const overdue = await overdueDeliveries(runtime.db);
  const minute = Math.floor(Date.now() / 60_000);
  for (const { id, attempts } of overdue) {
    await enqueueAttempt(runtime.queue, id, "scheduled", { jobKey: `a${attempts}-r${minute}` });
  }
  return overdue.length;
}

function every(intervalMs: number, task: () => Promise<unknown>, onError: (err: unknown) => void) {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = task()
      .catch(onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

/**
 * The worker's loops: the relay (every WEBHOOK_RELAY_INTERVAL_MS) and the recovery of lost
 * jobs (every minute). Several workers may run them at once.
 */
export function startWebhookLoops(runtime: WebhookRuntime): () => Promise<void> {
  const log = (task: string) => (err: unknown) =>
    runtime.logger.error({ err, task }, "webhook loop failed");
  const stopRelay = every(
    runtime.config.webhooks.relayIntervalMs,
    () => relayOnce(runtime),
    log("relay"),
  );
  const stopRecovery = every(
    RECOVERY_INTERVAL_MS,
    () => recoverOverdueDeliveries(runtime),
    log("recovery"),
  );
  return async () => {
    await Promise.all([stopRelay(), stopRecovery()]);
  };
}
