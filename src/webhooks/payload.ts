import type { changeEvents } from "../db/schema/index.js";

type ChangeEventRow = typeof changeEvents.$inferSelect;

/** The delivery body of the spec ("Events", payload); `actor_id` is `system` when no user acted. */
export function webhookPayload(event: ChangeEventRow) {
  return {
    id: event.id,
    type: event.type,
    action: event.action,
    target_kind: event.targetKind,
    target_id: event.targetId,
    actor_id: event.actorId ?? "system",
    occurred_at: event.occurredAt.toISOString(),
    diff: event.diff,
  };
}

export const USER_AGENT = "workspace-service-webhooks/1.0";
