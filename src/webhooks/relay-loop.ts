import type { Database } from "../db/client.js";
import type { DeliveryWorker, WebhookRuntime } from "./delivery-worker.js";
import { every } from "./every.js";
import { fanOutChangeEvents } from "./relay.js";

/** The channel the migrations' trigger notifies when change events commit. */
const CHANGE_EVENTS_RECORDED = "change_events_recorded";

/**
 * Fans out every pending event, and hands each new delivery to this worker's dispatcher: no queue
 * job, as the delivery row is already the record (one left for lack of room stays due).
 */
async function relayOnce(runtime: WebhookRuntime, deliveries: DeliveryWorker): Promise<number> {
  let fannedOut = 0;
  for (;;) {
    const { events, deliveries: fanned } = await fanOutChangeEvents(
      runtime.db,
      runtime.config.webhooks.relayBatchSize,
    );
    deliveries.submitFanned(fanned);
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
  deliveries: DeliveryWorker,
): Promise<() => Promise<void>> {
  const relay = every(
    runtime.config.webhooks.relayIntervalMs,
    () => relayOnce(runtime, deliveries),
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
