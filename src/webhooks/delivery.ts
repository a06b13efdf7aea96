import { and, eq, inArray, lte, sql } from "drizzle-orm";
import type { PgSelect } from "drizzle-orm/pg-core";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { changeEvents, webhookDeliveries, webhooks } from "../db/schema/index.js";
import { type MetricsRecorder, NO_METRICS } from "../metrics/recorder.js";
import type { DeliveryTrigger } from "../queue/jobs.js";
import { inSpan, type Span, type Tracer } from "../tracing/tracer.js";
import { type AttemptRecord, writeAttempts } from "./attempt-log.js";
import { grouped } from "./grouped.js";
import { createWebhookHttpClient, type DeliveryOutcome } from "./http-client.js";
import { USER_AGENT, webhookPayload } from "./payload.js";
import { decryptSecret } from "./secret-box.js";
import { webhookNetworkOf } from "./url-policy.js";
import { computeSignature } from "./verify.js";

/** What the webhook code logs with: a pino logger or a request's child of it. */
export type WebhookLog = Pick<Logger, "debug" | "info" | "warn" | "error">;

export type DeliveryDeps = {
  db: Db;
  config: Config;
  logger: WebhookLog;
  /** Puts each attempt in a span linked to the request that wrote the change (tracing on). */
  tracer?: Tracer;
  /** Counts the attempts and the lag of arrived deliveries; nothing is counted without one. */
  metrics?: MetricsRecorder;
};

// A job that fires a little early (clock skew between processes) still counts as due.
const DUE_SLACK_MS = 5_000;
const RETRY_JITTER = 0.2;

/**
 * Joins the deliveries to their events and their webhooks as they are now, so disabling a
 * webhook or rotating its secret takes effect on the very next attempt, whichever process made
 * the change.
 */
function ofDeliveries<Query extends PgSelect>(query: Query, deliveryIds: string[]) {
  return query
    .innerJoin(changeEvents, eq(changeEvents.id, webhookDeliveries.changeEventId))
    .innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(inArray(webhookDeliveries.id, deliveryIds));
}

/** One row per id asked, in its order: undefined where there is none. */
function inOrderOf<Row>(deliveryIds: string[], rows: Row[], idOf: (row: Row) => string) {
  const byId = new Map(rows.map((row) => [idOf(row), row]));
  return deliveryIds.map((id) => byId.get(id));
}

/** What an attempt reads: the delivery, its event (the body), its webhook's address and secret. */
async function loadDeliveries(db: Db, deliveryIds: string[]) {
  const query = db
    .select({
      delivery: webhookDeliveries,
      event: changeEvents,
      webhook: {
        url: webhooks.url,
        enabled: webhooks.enabled,
        secretCiphertext: webhooks.secretCiphertext,
        circuitOpenUntil: webhooks.circuitOpenUntil,
      },
    })
    .from(webhookDeliveries)
    .$dynamic();
  const rows = await ofDeliveries(query, deliveryIds);
  return inOrderOf(deliveryIds, rows, (row) => row.delivery.id);
}

/** The state `shouldAttempt` reads, without the event's body: the dispatcher's admission. */
async function loadAttemptStates(db: Db, deliveryIds: string[]) {
  const query = db
    .select({
      id: webhookDeliveries.id,
      webhookId: webhookDeliveries.webhookId,
      delivery: {
        status: webhookDeliveries.status,
        nextAttemptAt: webhookDeliveries.nextAttemptAt,
      },
      event: { type: changeEvents.type },
      webhook: {
        enabled: webhooks.enabled,
        circuitOpenUntil: webhooks.circuitOpenUntil,
        organizationId: webhooks.organizationId,
      },
    })
    .from(webhookDeliveries)
    .$dynamic();
  const rows = await ofDeliveries(query, deliveryIds);
  return inOrderOf(deliveryIds, rows, (row) => row.id);
}

/**
 * Takes the deliveries still due for one attempt by moving their next attempt past `leaseMs`: a
 * second job for one of them (a release racing a quick retry, on another worker) finds it not
 * due. A worker that dies mid-attempt leaves the delivery to the recovery loop after the lease.
 */
async function claimDueDeliveries(db: Db, deliveryIds: string[], leaseMs: number) {
  const due = and(
    inArray(webhookDeliveries.status, ["pending", "failed"]),
    lte(
      webhookDeliveries.nextAttemptAt,
      sql`now() + make_interval(secs => ${DUE_SLACK_MS / 1000})`,
    ),
  );
  const claimed = await db
    .update(webhookDeliveries)
    .set({ nextAttemptAt: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    // Found by primary key, then checked (see `dueDeliveriesOf` for why the check is wrapped).
    .where(and(inArray(webhookDeliveries.id, deliveryIds), sql`(${due}) is true`))
    .returning({ id: webhookDeliveries.id });
  const ids = new Set(claimed.map((row) => row.id));
  return deliveryIds.map((id) => ids.has(id));
}

type Loaded = NonNullable<Awaited<ReturnType<typeof loadDeliveries>>[number]>;

/** What deciding whether to attempt needs: the delivery's state, its event type, its webhook's. */
type AttemptState = {
  delivery: Pick<Loaded["delivery"], "status" | "nextAttemptAt">;
  event: Pick<Loaded["event"], "type">;
  webhook: Pick<Loaded["webhook"], "enabled" | "circuitOpenUntil">;
};

function shouldAttempt({ delivery, event, webhook }: AttemptState, trigger: DeliveryTrigger) {
  if (trigger === "manual") return true;
  // A ping is how an admin tests an endpoint before enabling it; everything else waits.
  if (!webhook.enabled && event.type !== "change.created") return false;
  // An open (or half-open) breaker: the delivery stays due, unattempted, until the probe closes it.
  if (webhook.circuitOpenUntil !== null && trigger !== "probe") return false;
  if (trigger === "pass") return delivery.status === "failed";
  const due =
    delivery.nextAttemptAt !== null &&
    delivery.nextAttemptAt.getTime() <= Date.now() + DUE_SLACK_MS;
  return (delivery.status === "pending" || delivery.status === "failed") && due;
}

const SECRET_CACHE_MS = 5 * 60_000;
const SECRET_CACHE_ENTRIES = 10_000;

/**
 * Signing secrets by ciphertext, each decrypted at most once every few minutes. The key is the
 * ciphertext read with the delivery, so a rotated secret (a new ciphertext) is used at once.
 */
function createSigningSecretCache(secretKey: string): (ciphertext: string) => string {
  const secrets = new Map<string, { secret: string; until: number }>();
  return (ciphertext) => {
    const now = Date.now();
    const cached = secrets.get(ciphertext);
    if (cached !== undefined && cached.until > now) return cached.secret;
    const secret = decryptSecret(secretKey, ciphertext);
    secrets.delete(ciphertext);
    if (secrets.size >= SECRET_CACHE_ENTRIES) {
      const oldest = secrets.keys().next().value;
      if (oldest !== undefined) secrets.delete(oldest);
    }
    secrets.set(ciphertext, { secret, until: now + SECRET_CACHE_MS });
    return secret;
  };
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
  const onSchedule = trigger === "scheduled" || trigger === "probe";
  if (onSchedule && delivery.passes === 0 && ladderDelay !== undefined) {
    const jitter = 1 + (Math.random() * 2 - 1) * RETRY_JITTER;
    return { status: "failed", nextAttemptAt: new Date(Date.now() + ladderDelay * 1000 * jitter) };
  }
  // A pass's attempt may run as "scheduled" (its job was skipped by the breaker or lost).
  const exhausted =
    delivery.status === "exhausted" ||
    (trigger !== "manual" && delivery.passes >= config.webhooks.retryPasses);
  return { status: exhausted ? "exhausted" : "failed", nextAttemptAt: null };
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

/** The delivery code with the state it keeps: built once per process, closed by one call. */
export type DeliveryPipeline = {
  /**
   * Whether a queued delivery is to be attempted now, and the webhook and organisation the
   * dispatcher's caps count it by; null when it is not (delivered, not due, held, breaker open).
   */
  dueDelivery(
    deliveryId: string,
    trigger: DeliveryTrigger,
  ): Promise<{ webhookId: string; organizationId: string } | null>;
  /**
   * One attempt of one delivery: the single code path of first tries, quick retries, the daily
   * pass and manual redelivery. Postgres holds the outcome; the queue only wakes it up.
   */
  attemptDelivery(deliveryId: string, trigger: DeliveryTrigger): Promise<AttemptReport | null>;
  /** Closes its HTTP agents, waiting for the requests in flight. */
  close(): Promise<void>;
};

/**
 * Owns what attempts share: the signing-secret cache, the HTTP agents, and the grouped reads and
 * writes (attempts that start or finish together share one statement).
 */
export function createDeliveryPipeline({
  db,
  config,
  logger,
  tracer,
  metrics = NO_METRICS,
}: DeliveryDeps): DeliveryPipeline {
  const http = createWebhookHttpClient();
  const signingSecret = createSigningSecretCache(config.secretKey);
  const byId = (id: string) => id;
  const loadDelivery = grouped((ids: string[]) => loadDeliveries(db, ids), byId);
  const loadAttemptState = grouped((ids: string[]) => loadAttemptStates(db, ids), byId);
  const claimLeaseMs = config.webhooks.deliveryTimeoutMs + DUE_SLACK_MS;
  const claimDelivery = grouped((ids: string[]) => claimDueDeliveries(db, ids, claimLeaseMs), byId);
  const recordAttempt = grouped<AttemptRecord, void>(
    async (records) => {
      const disabled = await writeAttempts(db, config.webhooks.autoDisableDays, records);
      for (const webhook of disabled) {
        logger.warn(webhook, "webhook disabled automatically");
      }
      return records.map(() => undefined);
    },
    (record) => record.deliveryId,
  );

  /** Signs the exact bytes sent, with a timestamp taken for this attempt. */
  const send = async ({ delivery, event, webhook }: Loaded) => {
    const body = Buffer.from(JSON.stringify(webhookPayload(event)));
    const timestamp = Math.floor(Date.now() / 1000);
    const secret = signingSecret(webhook.secretCiphertext);
    const headers = {
      "Content-Type": "application/json",
      "User-Agent": USER_AGENT,
      "X-Service-Event": event.type,
      "X-Service-Delivery": delivery.id,
      "X-Service-Timestamp": String(timestamp),
      "X-Service-Signature": computeSignature(secret, timestamp, body),
    };
    const outcome = await http.post(
      { url: webhook.url, body, headers },
      { ...webhookNetworkOf(config), timeoutMs: config.webhooks.deliveryTimeoutMs },
    );
    return { outcome, headers };
  };

  const attempt = async (
    deliveryId: string,
    trigger: DeliveryTrigger,
    span: Span | undefined,
  ): Promise<AttemptReport | null> => {
    const loaded = await loadDelivery(deliveryId);
    if (loaded === undefined || !shouldAttempt(loaded, trigger)) return null;
    // An admin's redelivery is sent whatever the state; every other attempt is taken first.
    if (trigger !== "manual" && !(await claimDelivery(deliveryId))) return null;
    if (loaded.event.traceContext !== null) span?.addLink(loaded.event.traceContext);
    span?.setAttributes({
      "webhook.id": loaded.delivery.webhookId,
      "webhook.event.id": loaded.event.id,
      "webhook.event.type": loaded.event.type,
    });
    const attemptedAt = new Date();
    const { outcome, headers } = await send(loaded);
    metrics.countDeliveryAttempt(outcome.kind);
    // Once per delivery: an admin's redelivery of a delivered one has arrived before.
    if (outcome.ok && loaded.delivery.status !== "delivered") {
      metrics.observeDeliveryLag((Date.now() - loaded.event.occurredAt.getTime()) / 1000);
    }
    const next: NextState = outcome.ok
      ? { status: "delivered", nextAttemptAt: null }
      : nextStateAfterFailure(config, loaded, trigger);
    span?.setAttributes({
      "http.response.status_code": outcome.statusCode ?? undefined,
      "error.type": outcome.error ?? undefined,
      "webhook.delivery.status": next.status,
    });
    if (!outcome.ok) span?.fail(outcome.error ?? `answered ${outcome.statusCode}`);
    await recordAttempt({
      deliveryId,
      webhookId: loaded.delivery.webhookId,
      attemptedAt,
      durationMs: outcome.durationMs,
      statusCode: outcome.statusCode,
      error: outcome.error,
      responseSnippet: outcome.responseSnippet,
      requestHeaders: headers,
      ok: outcome.ok,
      status: next.status,
      nextAttemptAt: next.nextAttemptAt,
    });
    const attempted = {
      webhookId: loaded.delivery.webhookId,
      deliveryId,
      trigger,
      outcome: outcome.kind,
      statusCode: outcome.statusCode,
      error: outcome.error,
      status: next.status,
    };
    // Failures are what an alert on warnings must see; successes are in the delivery log.
    if (next.status === "exhausted" && loaded.delivery.status !== "exhausted") {
      logger.error(attempted, "webhook delivery exhausted: no retries left");
    } else if (!outcome.ok) logger.warn(attempted, "webhook delivery attempt failed");
    else logger.debug(attempted, "webhook delivery attempted");
    return {
      deliveryId,
      outcome,
      status: next.status,
      retryAt: next.nextAttemptAt,
      attempts: loaded.delivery.attempts + 1,
    };
  };

  return {
    async dueDelivery(deliveryId, trigger) {
      const state = await loadAttemptState(deliveryId);
      if (state === undefined || !shouldAttempt(state, trigger)) return null;
      return { webhookId: state.webhookId, organizationId: state.webhook.organizationId };
    },

    attemptDelivery(deliveryId, trigger) {
      if (tracer === undefined) return attempt(deliveryId, trigger, undefined);
      // A trace of its own, whichever attempt's continuation starts it; the link leads back.
      const span = tracer.startSpan("webhook delivery attempt", {
        kind: "client",
        parent: "root",
        attributes: { "webhook.delivery.id": deliveryId, "webhook.delivery.trigger": trigger },
      });
      return inSpan(span, async () => {
        const report = await attempt(deliveryId, trigger, span);
        if (report === null) span.setAttributes({ "webhook.delivery.attempted": false });
        return report;
      });
    },

    close: () => http.close(),
  };
}
