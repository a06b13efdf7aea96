import { and, eq, sql } from "drizzle-orm";
import type { Logger } from "pino";

/** What the webhook code logs with: a pino logger or a request's child of it. */
export type WebhookLog = Pick<Logger, "info" | "warn" | "error">;

import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { changeEvents, webhookAttempts, webhookDeliveries, webhooks } from "../db/schema/index.js";
import type { DeliveryTrigger } from "../queue/jobs.js";
import { type DeliveryOutcome, postWebhook } from "./http-client.js";
import { USER_AGENT, webhookPayload } from "./payload.js";
import { decryptSecret } from "./secret-box.js";
import { computeSignature } from "./verify.js";

export type DeliveryDeps = { db: Db; config: Config; logger: WebhookLog };

// A job that fires a little early (clock skew between processes) still counts as due.
const DUE_SLACK_MS = 5_000;
const RETRY_JITTER = 0.2;

type Loaded = NonNullable<Awaited<ReturnType<typeof loadDelivery>>>;

async function loadDelivery(db: Db, deliveryId: string) {
  const [row] = await db
    .select({
      delivery: webhookDeliveries,
      event: changeEvents,
      webhook: {
        url: webhooks.url,
        enabled: webhooks.enabled,
        secretCiphertext: webhooks.secretCiphertext,
      },
    })
    .from(webhookDeliveries)
    .innerJoin(changeEvents, eq(changeEvents.id, webhookDeliveries.changeEventId))
    .innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(eq(webhookDeliveries.id, deliveryId));
  return row;
}

function shouldAttempt({ delivery, event, webhook }: Loaded, trigger: DeliveryTrigger): boolean {
  if (trigger === "manual") return true;
  // A ping is how an admin tests an endpoint before enabling it; everything else waits.
  if (!webhook.enabled && event.type !== "change.created") return false;
  if (trigger === "pass") return delivery.status === "failed";
  const due =
    delivery.nextAttemptAt !== null &&
    delivery.nextAttemptAt.getTime() <= Date.now() + DUE_SLACK_MS;
  return (delivery.status === "pending" || delivery.status === "failed") && due;
}

/** Signs the exact bytes sent, with a timestamp taken for this attempt. */
async function send(
  deps: DeliveryDeps,
  { delivery, event, webhook }: Loaded,
): Promise<DeliveryOutcome> {
  const body = Buffer.from(JSON.stringify(webhookPayload(event)));
  const timestamp = Math.floor(Date.now() / 1000);
  const secret = decryptSecret(deps.config.secretKey, webhook.secretCiphertext);
  return postWebhook(
    {
      url: webhook.url,
      body,
      headers: {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event.type,
        "X-Service-Delivery": delivery.id,
        "X-Service-Timestamp": String(timestamp),
        "X-Service-Signature": computeSignature(secret, timestamp, body),
      },
    },
    { production: deps.config.isProduction },
  );
}

type NextState = {
  status: "delivered" | "failed" | "exhausted";
  nextAttemptAt: Date | null;
};

/** Quick retries only before the first daily pass, then the passes until they run out. */
function nextStateAfterFailure(
  config: Config,
  loaded: Loaded,
  trigger: DeliveryTrigger,
): NextState {
  const { delivery } = loaded;
  const attempts = delivery.attempts + 1;
  const ladder = config.webhooks.quickRetrySeconds;
  const ladderDelay = ladder[attempts - 1];
  if (trigger === "scheduled" && delivery.passes === 0 && ladderDelay !== undefined) {
    const jitter = 1 + (Math.random() * 2 - 1) * RETRY_JITTER;
    return { status: "failed", nextAttemptAt: new Date(Date.now() + ladderDelay * 1000 * jitter) };
  }
  const exhausted =
    delivery.status === "exhausted" ||
    (trigger === "pass" && delivery.passes >= config.webhooks.retryPasses);
  return { status: exhausted ? "exhausted" : "failed", nextAttemptAt: null };
}

async function recordAttempt(
  deps: DeliveryDeps,
  loaded: Loaded,
  outcome: DeliveryOutcome,
  next: NextState,
  attemptedAt: Date,
): Promise<void> {
  const { delivery } = loaded;
  const disableBefore = new Date(
    attemptedAt.getTime() - deps.config.webhooks.autoDisableDays * 86_400_000,
  );
  await deps.db.transaction(async (tx) => {
    await tx.insert(webhookAttempts).values({
      deliveryId: delivery.id,
      attemptedAt,
      durationMs: outcome.durationMs,
      statusCode: outcome.statusCode,
      error: outcome.error,
      responseSnippet: outcome.responseSnippet,
    });
    await tx
      .update(webhookDeliveries)
      .set({
        status: next.status,
        attempts: sql`${webhookDeliveries.attempts} + 1`,
        lastAttemptAt: attemptedAt,
        nextAttemptAt: next.nextAttemptAt,
        ...(outcome.ok ? { deliveredAt: attemptedAt } : {}),
      })
      .where(eq(webhookDeliveries.id, delivery.id));
    if (outcome.ok) {
      await tx
        .update(webhooks)
        .set({ failingSince: null })
        .where(eq(webhooks.id, delivery.webhookId));
      return;
    }
    await tx
      .update(webhooks)
      .set({ failingSince: sql`coalesce(${webhooks.failingSince}, ${attemptedAt})` })
      .where(eq(webhooks.id, delivery.webhookId));
    await tx
      .update(webhooks)
      .set({
        enabled: false,
        disabledReason: `disabled automatically: every delivery failed for ${deps.config.webhooks.autoDisableDays} days`,
      })
      .where(
        and(
          eq(webhooks.id, delivery.webhookId),
          eq(webhooks.enabled, true),
          sql`${webhooks.failingSince} <= ${disableBefore}`,
        ),
      );
  });
}

export type AttemptReport = {
  deliveryId: string;
  outcome: DeliveryOutcome;
  status: NextState["status"];
  /** When a quick retry is due, for the caller to queue; null when none is. */
  retryAt: Date | null;
  /** Attempts made so far, this one included. */
  attempts: number;
};

/**
 * One attempt of one delivery: the single code path of first tries, quick retries, the daily
 * pass and manual redelivery. Postgres holds the outcome; the queue only wakes it up.
 */
export async function attemptDelivery(
  deps: DeliveryDeps,
  deliveryId: string,
  trigger: DeliveryTrigger,
): Promise<AttemptReport | null> {
  const loaded = await loadDelivery(deps.db, deliveryId);
  if (loaded === undefined || !shouldAttempt(loaded, trigger)) return null;
  const attemptedAt = new Date();
  const outcome = await send(deps, loaded);
  const next: NextState = outcome.ok
    ? { status: "delivered", nextAttemptAt: null }
    : nextStateAfterFailure(deps.config, loaded, trigger);
  await recordAttempt(deps, loaded, outcome, next, attemptedAt);
  deps.logger.info(
    {
      deliveryId,
      trigger,
      statusCode: outcome.statusCode,
      error: outcome.error,
      status: next.status,
    },
    "webhook delivery attempted",
  );
  return {
    deliveryId,
    outcome,
    status: next.status,
    retryAt: next.nextAttemptAt,
    attempts: loaded.delivery.attempts + 1,
  };
}
