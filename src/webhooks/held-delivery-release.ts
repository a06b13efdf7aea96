import type { Database } from "../db/client.js";
import type { WebhookRuntime } from "./delivery-worker.js";
import { enqueueAttempts } from "./enqueue-attempts.js";
import { DELIVERIES_RELEASED, heldDeliveries } from "./relay.js";

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

/**
 * Releases held deliveries as each webhook is enabled again. Missed (no worker was listening),
 * they are found by the recovery loop instead. Returns the function that stops listening.
 */
export function listenForReleasedDeliveries(
  runtime: WebhookRuntime,
  database: Pick<Database, "listen">,
): Promise<() => Promise<void>> {
  return database.listen(DELIVERIES_RELEASED, {
    onNotification: (announcement) =>
      void releaseHeldDeliveries(runtime, announcement).catch((err: unknown) =>
        runtime.logger.error({ err, task: "release" }, "webhook loop failed"),
      ),
    onListening: () => {},
    onDeaf: () => {},
  });
}
