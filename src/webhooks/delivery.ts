import { and, eq, inArray, isNull, lte, or, type SQL, sql } from "drizzle-orm";
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

/** One row per id asked, in its order: undefined where there is none. */
function inOrderOf<Row>(deliveryIds: string[], rows: Row[], idOf: (row: Row) => string) {
  const byId = new Map(rows.map((row) => [idOf(row), row]));
  return deliveryIds.map((id) => byId.get(id));
}

/**
 * What an attempt reads: the delivery, its event (the body), and its webhook's address and secret
 * as they are now, so disabling a webhook or rotating its secret takes effect on the very next
 * attempt, whichever process made the change.
 */
const attemptFields = {
  delivery: webhookDeliveries,
  event: changeEvents,
  webhook: { url: webhooks.url, secretCiphertext: webhooks.secretCiphertext },
};
const joinedToEventAndWebhook = and(
  eq(changeEvents.id, webhookDeliveries.changeEventId),
  eq(webhooks.id, webhookDeliveries.webhookId),
);

/** The deliveries of `deliveryIds` that meet `condition`, with their events and webhooks. */
function selectedDeliveries<Query extends PgSelect>(
  query: Query,
  deliveryIds: string[],
  condition?: SQL,
) {
  return query
    .innerJoin(changeEvents, eq(changeEvents.id, webhookDeliveries.changeEventId))
    .innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(and(inArray(webhookDeliveries.id, deliveryIds), condition));
}

/** Every trigger but an admin's redelivery, which is sent whatever the state. */
type DueTrigger = Exclude<DeliveryTrigger, "manual">;

/**
 * Whether a delivery is to be attempted now by `trigger`. Wrapped in `is true` so that no index
 * serves it and the rows are found by primary key (see `dueDeliveriesOf` for why).
 */
function attemptableBy(trigger: DueTrigger) {
  return sql`(${and(
    // A ping is how an admin tests an endpoint before enabling it; everything else waits.
    or(eq(webhooks.enabled, true), eq(changeEvents.type, "change.created")),
    // An open (or half-open) breaker: the delivery stays due, unattempted, until the probe closes it.
    trigger === "probe" ? undefined : isNull(webhooks.circuitOpenUntil),
    trigger === "pass"
      ? eq(webhookDeliveries.status, "failed")
      : inArray(webhookDeliveries.status, ["pending", "failed"]),
    lte(
      webhookDeliveries.nextAttemptAt,
      sql`now() + make_interval(secs => ${DUE_SLACK_MS / 1000})`,
    ),
  )}) is true`;
}

/** An admin's redelivery reads the delivery whatever its state, and takes nothing. */
async function loadDeliveries(db: Db, deliveryIds: string[]) {
  const query = db.select(attemptFields).from(webhookDeliveries).$dynamic();
  const rows = await selectedDeliveries(query, deliveryIds);
  return inOrderOf(deliveryIds, rows, (row) => row.delivery.id);
}

/**
 * Takes the deliveries `trigger` may attempt now, and reads them, in one statement: their next
 * attempt moves past `leaseMs`, so a second job for one of them (a release racing a quick retry,
 * on another worker) finds it not due. A worker that dies mid-attempt leaves the delivery to the
 * recovery loop after the lease.
 */
async function claimDeliveries(
  db: Db,
  trigger: DueTrigger,
  deliveryIds: string[],
  leaseMs: number,
) {
  const rows = await db
    .update(webhookDeliveries)
    .set({ nextAttemptAt: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .from(sql`${changeEvents}, ${webhooks}`)
    .where(
      and(
        inArray(webhookDeliveries.id, deliveryIds),
        joinedToEventAndWebhook,
        attemptableBy(trigger),
      ),
    )
    .returning(attemptFields);
  return inOrderOf(deliveryIds, rows, (row) => row.delivery.id);
}

/**
 * Which deliveries `trigger` may attempt now (an admin's redelivery: any that exists), with their
 * webhook and organisation.
 */
async function admissibleDeliveries(db: Db, trigger: DeliveryTrigger, deliveryIds: string[]) {
  const query = db
    .select({
      id: webhookDeliveries.id,
      webhookId: webhooks.id,
      organizationId: webhooks.organizationId,
    })
    .from(webhookDeliveries)
    .$dynamic();
  const condition = trigger === "manual" ? undefined : attemptableBy(trigger);
  const rows = await selectedDeliveries(query, deliveryIds, condition);
  return inOrderOf(deliveryIds, rows, (row) => row.id);
}

type Loaded = NonNullable<Awaited<ReturnType<typeof loadDeliveries>>[number]>;

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
  attemptDelivery(
    deliveryId: string,
    trigger: DeliveryTrigger,
    /** Called once the receiver's answer is in, before the outcome is written. */
    answered?: () => void,
  ): Promise<AttemptReport | null>;
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
  // One group per trigger, as the trigger decides what is attemptable.
  const groupedByTrigger = <T extends DeliveryTrigger, R>(
    run: (trigger: T, ids: string[]) => Promise<R[]>,
  ) => {
    const groups = new Map<T, (deliveryId: string) => Promise<R>>();
    return (trigger: T, deliveryId: string) => {
      let group = groups.get(trigger);
      if (group === undefined) {
        group = grouped((ids: string[]) => run(trigger, ids), byId);
        groups.set(trigger, group);
      }
      return group(deliveryId);
    };
  };
  const loadDelivery = grouped((ids: string[]) => loadDeliveries(db, ids), byId);
  const claimLeaseMs = config.webhooks.deliveryTimeoutMs + DUE_SLACK_MS;
  const claimDelivery = groupedByTrigger((trigger: DueTrigger, ids) =>
    claimDeliveries(db, trigger, ids, claimLeaseMs),
  );
  const admissibleDelivery = groupedByTrigger((trigger: DeliveryTrigger, ids) =>
    admissibleDeliveries(db, trigger, ids),
  );
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
    answered: (() => void) | undefined,
  ): Promise<AttemptReport | null> => {
    // An admin's redelivery is sent whatever the state; every other attempt is taken first.
    const loaded =
      trigger === "manual"
        ? await loadDelivery(deliveryId)
        : await claimDelivery(trigger, deliveryId);
    if (loaded === undefined) return null;
    if (loaded.event.traceContext !== null) span?.addLink(loaded.event.traceContext);
    span?.setAttributes({
      "webhook.id": loaded.delivery.webhookId,
      "webhook.event.id": loaded.event.id,
      "webhook.event.type": loaded.event.type,
    });
    const attemptedAt = new Date();
    const { outcome, headers } = await send(loaded);
    answered?.();
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
      const due = await admissibleDelivery(trigger, deliveryId);
      return due === undefined
        ? null
        : { webhookId: due.webhookId, organizationId: due.organizationId };
    },

    attemptDelivery(deliveryId, trigger, answered) {
      if (tracer === undefined) return attempt(deliveryId, trigger, undefined, answered);
      // A trace of its own, whichever attempt's continuation starts it; the link leads back.
      const span = tracer.startSpan("webhook delivery attempt", {
        kind: "client",
        parent: "root",
        attributes: { "webhook.delivery.id": deliveryId, "webhook.delivery.trigger": trigger },
      });
      return inSpan(span, async () => {
        const report = await attempt(deliveryId, trigger, span, answered);
        if (report === null) span.setAttributes({ "webhook.delivery.attempted": false });
        return report;
      });
    },

    close: () => http.close(),
  };
}
