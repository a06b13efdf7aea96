import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";

/** One attempt's outcome and the delivery state it leads to. */
export type AttemptRecord = {
  deliveryId: string;
  webhookId: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseSnippet: string | null;
  /** The headers as sent (the signature, never the secret), for the admin delivery log. */
  requestHeaders: Record<string, string>;
  ok: boolean;
  status: "delivered" | "failed" | "exhausted";
  nextAttemptAt: Date | null;
};

/**
 * Writes many attempts, their deliveries' new states and their webhooks' failure streaks in one
 * statement, with the audit entry of each automatic disable. A webhook row is written only when
 * its streak starts, ends or disables it, so concurrent deliveries to one webhook do not queue
 * on its row lock. Returns the webhooks this statement disabled, with the reason recorded.
 */
export async function writeAttempts(
  db: Db,
  autoDisableDays: number,
  records: AttemptRecord[],
): Promise<{ webhookId: string; reason: string }[]> {
  const disableBefore = new Date(Date.now() - autoDisableDays * 86_400_000).toISOString();
  const reason = `disabled automatically: every delivery failed for ${autoDisableDays} days`;
  const written = await db.execute(sql`
    with input as (
      select * from json_to_recordset(${JSON.stringify(records)}::json) as i(
        "deliveryId" uuid, "webhookId" uuid, "attemptedAt" timestamptz, "durationMs" int,
        "statusCode" int, error text, "responseSnippet" text, "requestHeaders" jsonb, ok boolean,
        status delivery_status, "nextAttemptAt" timestamptz)
    ), attempts as (
      insert into webhook_attempts
        (delivery_id, attempted_at, duration_ms, status_code, error, response_snippet,
         request_headers)
      select "deliveryId", "attemptedAt", "durationMs", "statusCode", error, "responseSnippet",
        "requestHeaders"
      from input
    ), deliveries as (
      update webhook_deliveries d set
        status = i.status,
        attempts = d.attempts + 1,
        last_attempt_at = i."attemptedAt",
        next_attempt_at = i."nextAttemptAt",
        delivered_at = case when i.ok then i."attemptedAt" else d.delivered_at end
      from input i
      -- The ids as a list too, so the planner reads those rows by key, not the whole table.
      where d.id = i."deliveryId" and d.id in ${records.map((record) => record.deliveryId)}
    ), streaks as (
      select "webhookId" as webhook_id,
        (array_agg(ok order by "attemptedAt" desc))[1] as last_ok,
        min("attemptedAt") filter (where not ok) as first_failure_at
      from input
      group by "webhookId"
    ), streak_updates as (
      update webhooks w set
        failing_since = case when s.last_ok then null
          else coalesce(w.failing_since, s.first_failure_at) end,
        enabled = w.enabled and (s.last_ok or w.failing_since is null
          or w.failing_since > ${disableBefore}::timestamptz),
        disabled_reason = case
          when not s.last_ok and w.enabled and w.failing_since <= ${disableBefore}::timestamptz
          then ${reason} else w.disabled_reason end
      from streaks s join webhooks prior on prior.id = s.webhook_id
      where w.id = s.webhook_id
        and case when s.last_ok then w.failing_since is not null
          else w.failing_since is null
            or (w.enabled and w.failing_since <= ${disableBefore}::timestamptz) end
      returning w.id, w.organization_id, w.url, prior.enabled and not w.enabled as disabled
    )
    insert into audit_log (organization_id, actor_type, actor_label, action, target_type,
      target_id, target_label, detail)
    select organization_id, 'system', 'system', 'webhook.disabled', 'webhook', id::text, url,
      jsonb_build_object('reason', ${reason}::text)
    from streak_updates where disabled
    returning target_id as "webhookId", detail->>'reason' as reason`);
  return rowsOf<{ webhookId: string; reason: string }>(written);
}
