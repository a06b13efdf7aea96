import type { Database } from "../db/client.js";
import { type DeliveryWorker, enqueueAttempts, type WebhookRuntime } from "./jobs.js";
import { DELIVERIES_RELEASED, fanOutChangeEvents, heldDeliveries } from "./relay.js";
import { overdueDeliveries } from "./retry-pass.js";

/** The channel the migrations' trigger notifies when change events commit. */
const CHANGE_EVENTS_RECORDED = "change_events_recorded";

/** Fans out every pending event, then queues the first attempt of each new delivery. */
async function relayOnce(runtime: WebhookRuntime): Promise<number> {
  let fannedOut = 0;
  for (;;) {
    const { events, deliveryIds } = await fanOutChangeEvents(
      runtime.db,
      runtime.config.webhooks.relayBatchSize,
    );
    await enqueueAttempts(
      runtime.queue,
      "scheduled",
      deliveryIds.map((deliveryId) => ({ deliveryId, jobKey: "a0" })),
    );
    fannedOut += events;
    if (events === 0) return fannedOut;
  }
}

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

/**
 * Queues what a webhook held while it was disabled, in event order. Every worker hears the
 * announcement; the release stamp in the job ids lets the queue keep one job per delivery.
 */
async function releaseHeldDeliveries(runtime: WebhookRuntime, announcement: string) {
  const [webhookId, stamp] = announcement.split(":");
  if (webhookId === undefined || stamp === undefined) return;
  const held = await heldDeliveries(runtime.db, webhookId);
  await enqueueAttempts(
    runtime.queue,
    "scheduled",
    held.map(({ id, attempts }) => ({ deliveryId: id, jobKey: `a${attempts}-e${stamp}` })),
  );
}

type Loop = { wake(): void; stop(): Promise<void> };

/**
 * Runs `task` every `intervalMs`, and at once when woken. A wake while the task runs makes it
 * run again right after, so nothing committed during a run waits for the next interval.
 */
function every(
  intervalMs: number,
  task: () => Promise<unknown>,
  onError: (err: unknown) => void,
): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let wokenWhileRunning = false;
  const tick = () => {
    clearTimeout(timer);
    wokenWhileRunning = false;
    running = task()
      .catch(onError)
      .finally(() => {
        running = undefined;
        if (stopped) return;
        if (wokenWhileRunning) tick();
        else timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    wake() {
      if (stopped) return;
      if (running === undefined) tick();
      else wokenWhileRunning = true;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/**
 * The worker's loops: the relay, woken by each commit of change events (Postgres NOTIFY, which
 * PGlite delivers in the embedded mode too) and polling every WEBHOOK_RELAY_INTERVAL_MS as the
 * safety net for a notification nobody heard; the release of what a webhook held once it is
 * enabled; and the recovery of lost jobs and probes, every WEBHOOK_RECOVERY_INTERVAL_MS.
 * Several workers may run them at once.
 */
export async function startWebhookLoops(
  runtime: WebhookRuntime,
  database: Pick<Database, "listen">,
  deliveries: DeliveryWorker,
): Promise<() => Promise<void>> {
  const log = (task: string) => (err: unknown) =>
    runtime.logger.error({ err, task }, "webhook loop failed");
  const relay = every(
    runtime.config.webhooks.relayIntervalMs,
    () => relayOnce(runtime),
    log("relay"),
  );
  const recovery = every(
    runtime.config.webhooks.recoveryIntervalMs,
    () => recoverOverdueDeliveries(runtime, deliveries),
    log("recovery"),
  );
  // Heard again after a gap: whatever committed meanwhile is fanned out now, not at the poll.
  const unlisten = await database.listen(CHANGE_EVENTS_RECORDED, {
    onNotification: () => relay.wake(),
    onListening: () => relay.wake(),
    onDeaf: () => {},
  });
  // Missed (no worker was listening), held deliveries are found by the recovery loop instead.
  const unlistenReleases = await database.listen(DELIVERIES_RELEASED, {
    onNotification: (announcement) =>
      void releaseHeldDeliveries(runtime, announcement).catch(log("release")),
    onListening: () => {},
    onDeaf: () => {},
  });
  return async () => {
    await Promise.all([unlisten(), unlistenReleases()]);
    await Promise.all([relay.stop(), recovery.stop()]);
  };
}
