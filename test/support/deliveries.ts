import type { Db } from "../../src/db/client.js";
import { changeEvents, webhookDeliveries } from "../../src/db/schema/index.js";

type DeliveryStatus = (typeof webhookDeliveries.$inferInsert)["status"];

/**
 * A delivery as the relay records it (a fanned-out change event of `type` and one delivery of
 * it), written directly in a chosen state, so a test sets up a log without sending anything.
 */
export async function recordDelivery(
  db: Db,
  input: {
    organizationId: string;
    webhookId: string;
    type?: string;
    diff?: Record<string, unknown>;
    status?: DeliveryStatus;
    passes?: number;
    createdAt?: Date;
  },
): Promise<string> {
  const type = input.type ?? "task.created";
  const [event] = await db
    .insert(changeEvents)
    .values({
      organizationId: input.organizationId,
      type,
      action: type.split(".")[1] ?? "created",
      targetKind: type.split(".")[0] ?? "task",
      targetId: "t-1",
      diff: { before: {}, after: input.diff ?? {} },
      fannedOutAt: new Date(),
    })
    .returning({ id: changeEvents.id });
  if (event === undefined) throw new Error("no event");
  const [delivery] = await db
    .insert(webhookDeliveries)
    .values({
      webhookId: input.webhookId,
      changeEventId: event.id,
      status: input.status,
      passes: input.passes,
      createdAt: input.createdAt,
    })
    .returning({ id: webhookDeliveries.id });
  if (delivery === undefined) throw new Error("no delivery");
  return delivery.id;
}
