import type { Database } from "../db/client.js";
import type { WebhookRuntime } from "./delivery-worker.js";
import { enqueueAttempts } from "./enqueue-attempts.js";
import { every } from "./every.js";
import { fanOutChangeEvents } from "./relay.js";

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
 * The relay, woken by each commit of change events (Postgres NOTIFY, which PGlite delivers in the
 * embedded mode too) and polling every WEBHOOK_RELAY_INTERVAL_MS as the safety net for a
 * notification nobody heard. Several workers may run it at once. Returns the function that stops it.
 */
export async function startRelayLoop(
  runtime: WebhookRuntime,
  database: Pick<Database, "listen">,
): Promise<() => Promise<void>> {
  const relay = every(
    runtime.config.webhooks.relayIntervalMs,
    () => relayOnce(runtime),
    (err) => runtime.logger.error({ err, task: "relay" }, "webhook loop failed"),
  );
  // Heard again after a gap: whatever committed meanwhile is fanned out now, not at the poll.
  const unlisten = await database.listen(CHANGE_EVENTS_RECORDED, {
    onNotification: () => relay.wake(),
    onListening: () => relay.wake(),
    onDeaf: () => {},
  });
  return async () => {
    await unlisten();
    await relay.stop();
  };
}
