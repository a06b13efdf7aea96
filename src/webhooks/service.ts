import { and, asc, count, desc, eq, gte, inArray, ne, type SQL, sql } from "drizzle-orm";
import type { Config } from "../config.js";
import { InvalidRequest, NotFound } from "../core/errors.js";
import type { Db } from "../db/client.js";
import { assertRowReturned } from "../db/returned-row.js";
import {
  changeEvents,
  organizations,
  webhookAttempts,
  webhookDeliveries,
  webhookSubscriptions,
  webhooks,
} from "../db/schema/index.js";
import { type AuditContext, recordAudit } from "../modules/audit/service.js";
import {
  type ChangeEventType,
  catalogueEntry,
  changeEventCatalogue,
} from "../modules/change-events/catalogue.js";
import { type DeliveryStatus, deliveryLogPage } from "./delivery-log.js";
import { DELIVERIES_RELEASED } from "./relay.js";
import { encryptSecret, generateSigningSecret } from "./secret-box.js";
import { checkWebhookUrl, type WebhookNetwork, webhookNetworkOf } from "./url-policy.js";

const webhookEventTypes: ChangeEventType[] = changeEventCatalogue.map((entry) => entry.type);

export type RegistrationSettings = {
  secretKey: string;
  /** WEBHOOK_MAX_PER_ORGANIZATION: every change fans out to each of an organisation's webhooks. */
  maxPerOrganization: number;
} & WebhookNetwork;

/** What registering a webhook needs from the configuration. */
export function registrationSettingsOf(config: Config): RegistrationSettings {
  return {
    secretKey: config.secretKey,
    maxPerOrganization: config.webhooks.maxPerOrganization,
    ...webhookNetworkOf(config),
  };
}

function isEventType(type: string): type is ChangeEventType {
  return (webhookEventTypes as string[]).includes(type);
}

/** `all`, or a list of catalogue types in the caller's order; anything else is refused naming it. */
function parseEventTypes(requested: readonly string[]): ChangeEventType[] {
  if (requested.length === 1 && requested[0] === "all") return [...webhookEventTypes];
  const unknown = requested.filter((type) => !isEventType(type));
  if (unknown.length > 0)
    throw new InvalidRequest(`events: unknown event type ${unknown.join(", ")}`);
  const types = [...new Set(requested)].filter(isEventType);
  if (types.length === 0) throw new InvalidRequest("events: subscribe to at least one event type");
  return types;
}

export type NewWebhook = {
  organizationId: string;
  url: string;
  events: readonly string[];
  createdBy?: string | null;
};

/**
 * Refuses one webhook more than the cap. The organisation row is locked first, so concurrent
 * registrations count one after the other; NO KEY UPDATE leaves inserts that reference the
 * organisation (which take KEY SHARE) unblocked.
 */
async function claimWebhookSlot(tx: Db, organizationId: string, max: number): Promise<void> {
  await tx
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.id, organizationId))
    .for("no key update");
  const [registered] = await tx
    .select({ count: count() })
    .from(webhooks)
    .where(eq(webhooks.organizationId, organizationId));
  const registeredCount = registered?.count ?? 0;
  if (registeredCount >= max) {
    throw new InvalidRequest(
      `This organisation already has ${registeredCount} webhooks; it may register at most ${max} (WEBHOOK_MAX_PER_ORGANIZATION)`,
    );
  }
}

/** Registers a webhook; the signing secret is returned this once and stored encrypted. */
export async function createWebhook(
  db: Db,
  audit: AuditContext,
  settings: RegistrationSettings,
  input: NewWebhook,
): Promise<{ id: string; secret: string }> {
  const checked = await checkWebhookUrl(input.url, settings);
  if (!checked.ok) throw new InvalidRequest(`url: ${checked.reason}`);
  const events = parseEventTypes(input.events);
  const secret = generateSigningSecret();
  return db.transaction(async (tx) => {
    await claimWebhookSlot(tx, input.organizationId, settings.maxPerOrganization);
    const [webhook] = await tx
      .insert(webhooks)
      .values({
        organizationId: input.organizationId,
        // Stored as the admin wrote it (it passed the checks), so lists show it back unchanged.
        url: input.url.trim(),
        secretCiphertext: encryptSecret(settings.secretKey, secret),
        createdBy: input.createdBy ?? null,
      })
      .returning({ id: webhooks.id });
    assertRowReturned(webhook, "webhook insert");
    await tx
      .insert(webhookSubscriptions)
      .values(
        events.map((eventType, position) => ({ webhookId: webhook.id, eventType, position })),
      );
    await recordAudit(tx, audit, {
      organizationId: input.organizationId,
      action: "webhook.created",
      target: { type: "webhook", id: webhook.id, label: input.url.trim() },
      detail: { events },
    });
    return { id: webhook.id, secret };
  });
}

/** The webhook's newest delivery, and the answer its last attempt got. */
type LastDelivery = {
  id: string;
  status: DeliveryStatus;
  createdAt: string;
  /** Null while it has not been attempted (due, held, or waiting for a paused webhook). */
  lastAttemptAt: string | null;
  statusCode: number | null;
  error: string | null;
};

/** What the receiver answered the newest delivery's last attempt, in a few words. */
export function lastAnswerText(delivery: LastDelivery): string {
  if (delivery.statusCode !== null) return `HTTP ${delivery.statusCode}`;
  return delivery.error ?? "not attempted yet";
}

/** Deliveries recorded in the last 24 hours, by their state now (as the webhook page counts). */
type LastDayCounts = {
  delivered: number;
  /** Failed or exhausted. */
  failed: number;
  /** Delivered out of those settled (pending ones not counted); null when none settled. */
  successRate: number | null;
};

export type WebhookSummary = {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  /** Deliveries waiting for the webhook to be enabled again. */
  heldDeliveries: number;
  /** Deliveries the daily pass gave up on (WEBHOOK_RETRY_PASSES); an admin may take them back. */
  exhaustedDeliveries: number;
  /** While its circuit breaker is open: no attempts until then, then one probe. */
  pausedUntil: string | null;
  /** The failures that opened the breaker, and its failed probes. */
  pausedAfterFailures: number | null;
  lastDelivery: LastDelivery | null;
  last24Hours: LastDayCounts;
  createdAt: string;
};

const countWhere = (condition: SQL) => sql<number>`count(*) filter (where ${condition})::int`;

/**
 * Every webhook of the organisation with what tells a failing one apart, in one statement: each
 * part is read from one webhook's entries in an index (the newest delivery and its last attempt,
 * the last day's settled deliveries, the held and exhausted ones), never a scan of the tables.
 */
export async function listWebhooks(db: Db, organizationId: string): Promise<WebhookSummary[]> {
  const newest = db
    .select({
      id: webhookDeliveries.id,
      status: webhookDeliveries.status,
      createdAt: webhookDeliveries.createdAt,
      lastAttemptAt: webhookDeliveries.lastAttemptAt,
    })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, webhooks.id))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(1)
    .as("newest");
  const answer = db
    .select({ statusCode: webhookAttempts.statusCode, error: webhookAttempts.error })
    .from(webhookAttempts)
    .where(eq(webhookAttempts.deliveryId, newest.id))
    .orderBy(desc(webhookAttempts.attemptedAt))
    .limit(1)
    .as("answer");
  const lastDay = db
    .select({
      delivered: countWhere(eq(webhookDeliveries.status, "delivered")).as("delivered"),
      failed: countWhere(ne(webhookDeliveries.status, "delivered")).as("failed"),
    })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.webhookId, webhooks.id),
        inArray(webhookDeliveries.status, ["delivered", "failed", "exhausted"]),
        gte(webhookDeliveries.createdAt, sql`now() - interval '24 hours'`),
      ),
    )
    .as("last_day");
  const rows = await db
    .select({
      id: webhooks.id,
      url: webhooks.url,
      enabled: webhooks.enabled,
      disabledReason: webhooks.disabledReason,
      createdAt: webhooks.createdAt,
      pausedUntil: webhooks.circuitOpenUntil,
      pausedAfterFailures: webhooks.circuitFailures,
      heldDeliveries: sql<number>`case when ${webhooks.enabled} then 0 else (select count(*) from webhook_deliveries d where d.webhook_id = ${webhooks.id} and d.status in ('pending', 'failed'))::int end`,
      exhaustedDeliveries: sql<number>`(select count(*) from webhook_deliveries d where d.webhook_id = ${webhooks.id} and d.status = 'exhausted')::int`,
      events: sql<
        string[]
      >`coalesce((select array_agg(s.event_type order by s.position, s.event_type) from webhook_subscriptions s where s.webhook_id = ${webhooks.id}), '{}')`,
      newest: {
        id: newest.id,
        status: newest.status,
        createdAt: newest.createdAt,
        lastAttemptAt: newest.lastAttemptAt,
      },
      answer: { statusCode: answer.statusCode, error: answer.error },
      delivered: lastDay.delivered,
      failed: lastDay.failed,
    })
    .from(webhooks)
    .leftJoinLateral(newest, sql`true`)
    .leftJoinLateral(answer, sql`true`)
    .crossJoinLateral(lastDay)
    .where(eq(webhooks.organizationId, organizationId))
    .orderBy(asc(webhooks.createdAt), asc(webhooks.id));
  return rows.map(({ newest, answer, delivered, failed, ...row }) => ({
    ...row,
    createdAt: row.createdAt.toISOString(),
    pausedUntil: row.pausedUntil?.toISOString() ?? null,
    lastDelivery:
      newest === null
        ? null
        : {
            id: newest.id,
            status: newest.status,
            createdAt: newest.createdAt.toISOString(),
            lastAttemptAt: newest.lastAttemptAt?.toISOString() ?? null,
            statusCode: answer?.statusCode ?? null,
            error: answer?.error ?? null,
          },
    last24Hours: {
      delivered,
      failed,
      successRate: delivered + failed === 0 ? null : delivered / (delivered + failed),
    },
  }));
}

/** The webhook, within an organisation when one is given (admin pages), else anywhere (CLI). */
export async function findWebhook(db: Db, id: string, organizationId?: string) {
  const conditions = [eq(webhooks.id, id)];
  if (organizationId !== undefined) conditions.push(eq(webhooks.organizationId, organizationId));
  const [webhook] = await db
    .select()
    .from(webhooks)
    .where(and(...conditions));
  if (webhook === undefined) throw new NotFound(`No webhook with id ${id}`);
  return webhook;
}

/**
 * Enabling clears an automatic disable, and the failure run that caused it, and releases the
 * deliveries held meanwhile: the workers hear it in the same commit and queue them in order.
 */
export async function setWebhookEnabled(
  db: Db,
  audit: AuditContext,
  input: { id: string; enabled: boolean; organizationId?: string },
): Promise<void> {
  const webhook = await findWebhook(db, input.id, input.organizationId);
  await db.transaction(async (tx) => {
    await tx
      .update(webhooks)
      .set(
        input.enabled
          ? { enabled: true, disabledReason: null, failingSince: null }
          : { enabled: false, disabledReason: "disabled by an admin" },
      )
      .where(eq(webhooks.id, input.id));
    if (input.enabled) {
      await tx.execute(
        sql`select pg_notify(${DELIVERIES_RELEASED}, ${input.id} || ':' || floor(extract(epoch from clock_timestamp()) * 1000)::bigint)`,
      );
    }
    await recordAudit(tx, audit, {
      organizationId: webhook.organizationId,
      action: input.enabled ? "webhook.enabled" : "webhook.disabled",
      target: { type: "webhook", id: webhook.id, label: webhook.url },
      detail: input.enabled ? {} : { reason: "disabled by an admin" },
    });
  });
}

export type DeliverySummary = {
  id: string;
  eventId: number;
  type: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** Every attempt's answer, oldest first: its status code, or its error when none came. */
  responses: (string | null)[];
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
};

/**
 * The newest deliveries of one webhook, with the outcome of each attempt: the first page of the
 * admin area's delivery log (the same query), as `svc webhook deliveries` lists it.
 */
export async function listDeliveries(
  db: Db,
  input: { webhookId: string; organizationId?: string; limit?: number },
): Promise<DeliverySummary[]> {
  await findWebhook(db, input.webhookId, input.organizationId);
  const { deliveries } = await deliveryLogPage(db, {
    webhookId: input.webhookId,
    status: null,
    eventType: null,
    after: null,
    limit: input.limit ?? 100,
  });
  return deliveries.map((delivery) => {
    const last = delivery.attemptLog.at(-1);
    return {
      id: delivery.id,
      eventId: delivery.event.id,
      type: delivery.event.type,
      status: delivery.status,
      attempts: delivery.attempts,
      lastStatusCode: last?.statusCode ?? null,
      lastError: last?.error ?? null,
      responses: delivery.attemptLog.map((attempt) =>
        attempt.statusCode === null ? attempt.error : String(attempt.statusCode),
      ),
      lastAttemptAt: delivery.lastAttemptAt?.toISOString() ?? null,
      nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
      createdAt: delivery.createdAt.toISOString(),
    };
  });
}

/**
 * Records an admin's or operator's redelivery before its attempt is queued or made: the entry
 * says it was asked for. With `organizationId` (and `webhookId`), only a delivery of theirs.
 */
export async function recordRedelivery(
  db: Db,
  audit: AuditContext,
  input: { deliveryId: string; organizationId?: string; webhookId?: string },
): Promise<{ id: string; webhookId: string }> {
  const conditions = [eq(webhookDeliveries.id, input.deliveryId)];
  if (input.organizationId !== undefined)
    conditions.push(eq(webhooks.organizationId, input.organizationId));
  if (input.webhookId !== undefined) conditions.push(eq(webhooks.id, input.webhookId));
  return db.transaction(async (tx) => {
    const [delivery] = await tx
      .select({
        id: webhookDeliveries.id,
        webhookId: webhookDeliveries.webhookId,
        organizationId: webhooks.organizationId,
        url: webhooks.url,
        eventId: webhookDeliveries.changeEventId,
      })
      .from(webhookDeliveries)
      .innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
      .where(and(...conditions));
    if (delivery === undefined) throw new NotFound(`No delivery with id ${input.deliveryId}`);
    await recordAudit(tx, audit, {
      organizationId: delivery.organizationId,
      action: "delivery.redelivered",
      target: { type: "delivery", id: delivery.id, label: delivery.url },
      detail: { webhookId: delivery.webhookId, eventId: delivery.eventId },
    });
    return { id: delivery.id, webhookId: delivery.webhookId };
  });
}

/**
 * The ping (spec, "Write endpoints"): a synthetic `change.created` event and its one delivery
 * to the named webhook, written together. Works on a disabled webhook too: it is how an admin
 * tests an endpoint before enabling it.
 */
export type PingInput = {
  organizationId: string;
  webhookId: string;
  actorId: string | null;
  /** The W3C traceparent of the request that pings (tracing on). */
  traceContext?: string | null;
};

export async function createPingDelivery(
  db: Db,
  input: PingInput,
): Promise<{ deliveryId: string }> {
  return db.transaction(async (tx) => {
    const [webhook] = await tx
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(
        and(eq(webhooks.id, input.webhookId), eq(webhooks.organizationId, input.organizationId)),
      );
    if (webhook === undefined)
      throw new InvalidRequest("webhook_id: no such webhook in this organisation");
    const ping = catalogueEntry("change.created");
    const [event] = await tx
      .insert(changeEvents)
      .values({
        organizationId: input.organizationId,
        type: ping.type,
        action: ping.action,
        targetKind: ping.targetKind,
        targetId: webhook.id,
        actorId: input.actorId,
        diff: { before: {}, after: {} },
        traceContext: input.traceContext,
        // Addressed to this one webhook: the relay must not fan it out to others.
        fannedOutAt: sql`now()`,
      })
      .returning({ id: changeEvents.id });
    assertRowReturned(event, "change event insert");
    const [delivery] = await tx
      .insert(webhookDeliveries)
      .values({ webhookId: webhook.id, changeEventId: event.id, nextAttemptAt: sql`now()` })
      .returning({ id: webhookDeliveries.id });
    assertRowReturned(delivery, "delivery insert");
    return { deliveryId: delivery.id };
  });
}

export type WebhookChanges = { url?: string; events?: readonly string[] };

/**
 * Changes the URL and/or the events with registration's rules: a new URL passes the SSRF policy
 * again. The subscriptions are replaced in one transaction, so the relay sees the old or the new.
 */
export async function updateWebhook(
  db: Db,
  settings: WebhookNetwork,
  input: { id: string; organizationId?: string } & WebhookChanges,
): Promise<void> {
  if (input.url === undefined && input.events === undefined) {
    throw new InvalidRequest("Give a new url, new events, or both");
  }
  await findWebhook(db, input.id, input.organizationId);
  if (input.url !== undefined) {
    const checked = await checkWebhookUrl(input.url, settings);
    if (!checked.ok) throw new InvalidRequest(`url: ${checked.reason}`);
  }
  const events = input.events === undefined ? undefined : parseEventTypes(input.events);
  await db.transaction(async (tx) => {
    // Locked, so a delete meanwhile is refused here rather than failing the subscription insert.
    const [locked] = await tx
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(eq(webhooks.id, input.id))
      .for("update");
    if (locked === undefined) throw new NotFound(`No webhook with id ${input.id}`);
    if (input.url !== undefined) {
      await tx.update(webhooks).set({ url: input.url.trim() }).where(eq(webhooks.id, input.id));
    }
    if (events !== undefined) {
      await tx.delete(webhookSubscriptions).where(eq(webhookSubscriptions.webhookId, input.id));
      await tx
        .insert(webhookSubscriptions)
        .values(
          events.map((eventType, position) => ({ webhookId: input.id, eventType, position })),
        );
    }
  });
}

/**
 * Replaces the signing secret; the new one is returned this once. Attempts read the ciphertext
 * with their delivery and the pipeline caches secrets by ciphertext, so the next attempt signs
 * with the new secret.
 */
export async function rotateWebhookSecret(
  db: Db,
  audit: AuditContext,
  secretKey: string,
  input: { id: string; organizationId?: string },
): Promise<{ id: string; secret: string }> {
  const webhook = await findWebhook(db, input.id, input.organizationId);
  const secret = generateSigningSecret();
  await db.transaction(async (tx) => {
    await tx
      .update(webhooks)
      .set({ secretCiphertext: encryptSecret(secretKey, secret) })
      .where(eq(webhooks.id, input.id));
    await recordAudit(tx, audit, {
      organizationId: webhook.organizationId,
      action: "webhook.secret_replaced",
      target: { type: "webhook", id: webhook.id, label: webhook.url },
    });
  });
  return { id: input.id, secret };
}

/** Deliveries still to be sent: due while the webhook is enabled, held while it is disabled. */
export type UnsentDeliveries = { due: number; held: number };

async function countUnsentDeliveries(tx: Db, webhookId: string): Promise<UnsentDeliveries> {
  const [row] = await tx
    .select({ enabled: webhooks.enabled, unsent: count(webhookDeliveries.id) })
    .from(webhooks)
    .leftJoin(
      webhookDeliveries,
      and(
        eq(webhookDeliveries.webhookId, webhooks.id),
        inArray(webhookDeliveries.status, ["pending", "failed"]),
      ),
    )
    .where(eq(webhooks.id, webhookId))
    .groupBy(webhooks.id);
  if (row === undefined) return { due: 0, held: 0 };
  return row.enabled ? { due: row.unsent, held: 0 } : { due: 0, held: row.unsent };
}

/** What deleting the webhook would drop: the admin area asks for confirmation showing it. */
export async function unsentDeliveriesOf(
  db: Db,
  input: { id: string; organizationId?: string },
): Promise<UnsentDeliveries> {
  await findWebhook(db, input.id, input.organizationId);
  return countUnsentDeliveries(db, input.id);
}

/**
 * Deletes the webhook with its subscriptions and deliveries (the foreign keys cascade); returns
 * the unsent deliveries that were dropped. The row lock makes the count match what is deleted.
 */
export async function deleteWebhook(
  db: Db,
  input: { id: string; organizationId?: string },
): Promise<UnsentDeliveries> {
  await findWebhook(db, input.id, input.organizationId);
  return db.transaction(async (tx) => {
    await tx
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(eq(webhooks.id, input.id))
      .for("update");
    const dropped = await countUnsentDeliveries(tx, input.id);
    await tx.delete(webhooks).where(eq(webhooks.id, input.id));
    return dropped;
  });
}
