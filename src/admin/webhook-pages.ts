import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { changeEventCatalogue } from "../modules/change-events/catalogue.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import {
  type DeliveryStatus,
  decodeCursor,
  deliveryActivity,
  deliveryLogPage,
  deliveryStatuses,
  encodeCursor,
  isDeliveryStatus,
  type LogCursor,
} from "../webhooks/delivery-log.js";
import { enqueueAttempt, enqueueClaimedRetries, queuePing } from "../webhooks/enqueue-attempts.js";
import { runRetryPass } from "../webhooks/retry-pass.js";
import {
  createWebhook,
  findDelivery,
  listWebhooks,
  registrationSettingsOf,
  setWebhookEnabled,
} from "../webhooks/service.js";
import {
  adminContextOf,
  formField,
  formList,
  listPage,
  pathId,
  refusedFieldByPrefix,
  renderAdminPage,
  sectionPath,
  showingRefusals,
} from "./context.js";
import { buildChart, formatRate } from "./delivery-chart.js";

const eventChoices = changeEventCatalogue.map((entry) => ({
  type: entry.type,
  targetKind: entry.targetKind,
}));

type WebhookForm = { url: string; events: string[] };

const webhookList = listPage<WebhookForm>(
  "webhooks",
  "Webhooks",
  { url: "", events: [] },
  async (request, organizationId) => ({
    webhooks: await listWebhooks(request.server.db, organizationId),
    eventChoices,
  }),
  refusedFieldByPrefix({ "url:": "url", "events:": "events" }),
);

const LOG_PAGE_SIZE = 25;

type LogFilters = {
  status: DeliveryStatus | null;
  eventType: string | null;
  after: { direction: "older" | "newer"; cursor: LogCursor } | null;
};

function refusedQuery(what: string): PageError {
  return new PageError(400, "Request not accepted", `The address has an unknown ${what}.`);
}

/** The log's filters and position from the query string; anything else is refused (400). */
function logFilters(query: unknown, eventTypes: string[]): LogFilters {
  const values = (query ?? {}) as Record<string, unknown>;
  const single = (name: string): string | null => {
    const value = values[name];
    if (value === undefined || value === "") return null;
    if (typeof value !== "string") throw refusedQuery(name);
    return value;
  };
  const status = single("status");
  if (status !== null && !isDeliveryStatus(status)) throw refusedQuery("status");
  const eventType = single("event");
  if (eventType !== null && !eventTypes.includes(eventType)) throw refusedQuery("event type");
  const before = single("before");
  const after = single("after");
  const cursorText = before ?? after;
  let position: LogFilters["after"] = null;
  if (cursorText !== null) {
    const cursor = decodeCursor(cursorText);
    if (cursor === null || (before !== null && after !== null)) throw refusedQuery("page");
    position = { direction: before !== null ? "older" : "newer", cursor };
  }
  return { status, eventType, after: position };
}

function webhookPath(request: FastifyRequest, webhookId: string): string {
  return `${sectionPath(request, "webhooks")}/${webhookId}`;
}

/**
 * Webhooks on the webhook service: register (event checkboxes, secret shown once), enable and
 * disable, the delivery log with attempts and response codes, redeliver and ping. Sending is
 * the worker's: the pages only record the delivery and queue its attempt.
 */
export async function webhookPages(app: FastifyInstance, options: { config: Config }) {
  const settings = registrationSettingsOf(options.config);

  app.get("/:org/webhooks", async (request, reply) => webhookList(request, reply));

  app.post("/:org/webhooks", async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const form: WebhookForm = {
      url: formField(request, "url").trim(),
      events: formList(request, "events"),
    };
    return showingRefusals(request, reply, webhookList, form, async () => {
      const created = await createWebhook(app.db, settings, {
        organizationId: organization.id,
        url: form.url,
        events: form.events,
        createdBy: user.id,
      });
      return renderAdminPage(request, reply, "webhooks", "admin/webhook-created", {
        title: "Webhook registered",
        webhookId: created.id,
        url: form.url,
        secret: created.secret,
      });
    });
  });

  app.get("/:org/webhooks/:id", async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhookId = pathId(request);
    const webhook = (await listWebhooks(app.db, organization.id)).find(
      (candidate) => candidate.id === webhookId,
    );
    if (webhook === undefined) throw new PageError(404, "Not found", "There is no such webhook.");
    // A ping is a change.created delivery, whatever the webhook subscribes to.
    const eventTypes = [...new Set([...webhook.events, "change.created"])];
    const filters = logFilters(request.query, eventTypes);
    const now = new Date();
    const [activity, log] = await Promise.all([
      deliveryActivity(app.db, webhookId, now),
      deliveryLogPage(app.db, {
        webhookId,
        status: filters.status,
        eventType: filters.eventType,
        after: filters.after,
        limit: LOG_PAGE_SIZE,
      }),
    ]);
    const pageLink = (position: { direction: "older" | "newer"; cursor: LogCursor } | null) => {
      const query = new URLSearchParams();
      if (filters.status !== null) query.set("status", filters.status);
      if (filters.eventType !== null) query.set("event", filters.eventType);
      if (position !== null) {
        query.set(
          position.direction === "older" ? "before" : "after",
          encodeCursor(position.cursor),
        );
      }
      const text = query.toString();
      return `${webhookPath(request, webhookId)}${text === "" ? "" : `?${text}`}#log`;
    };
    return renderAdminPage(request, reply, "webhooks", "admin/webhook", {
      title: "Webhook",
      webhook,
      charts: { hours: buildChart(activity.hours, "hour"), days: buildChart(activity.days, "day") },
      formatRate,
      log,
      filters,
      statuses: deliveryStatuses,
      eventTypes,
      links: {
        older: log.older === null ? null : pageLink({ direction: "older", cursor: log.older }),
        newer: log.newer === null ? null : pageLink({ direction: "newer", cursor: log.newer }),
        newest: log.newer === null ? null : pageLink(null),
      },
      formatJson: (value: unknown) => JSON.stringify(value, null, 2),
    });
  });

  for (const [action, enabled] of [
    ["enable", true],
    ["disable", false],
  ] as const) {
    app.post(`/:org/webhooks/:id/${action}`, async (request, reply) => {
      const { organization } = adminContextOf(request);
      const webhookId = pathId(request);
      await setWebhookEnabled(app.db, { id: webhookId, enabled, organizationId: organization.id });
      leaveNotice(request, enabled ? "Webhook enabled." : "Webhook disabled.");
      return reply.redirect(webhookPath(request, webhookId), 303);
    });
  }

  // The same pass as the daily one and `svc webhook retry-failed`, for this organisation only.
  app.post("/:org/webhooks/retry-failed", async (request, reply) => {
    const { organization } = adminContextOf(request);
    const queued = await runRetryPass(
      app.db,
      app.config.webhooks.retryPasses,
      enqueueClaimedRetries(app.queue),
      { organizationId: organization.id },
    );
    request.log.info({ deliveries: queued }, "webhook retry pass queued");
    leaveNotice(
      request,
      `${queued} failed ${queued === 1 ? "delivery" : "deliveries"} queued for another attempt.`,
    );
    return reply.redirect(sectionPath(request, "webhooks"), 303);
  });

  app.post("/:org/webhooks/:id/ping", async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const webhookId = pathId(request);
    await queuePing(
      { db: app.db, queue: app.queue, logger: request.log },
      { organizationId: organization.id, webhookId, actorId: user.id },
    );
    leaveNotice(request, "Ping queued: a change.created delivery is on its way.");
    return reply.redirect(webhookPath(request, webhookId), 303);
  });

  app.post("/:org/webhooks/:id/deliveries/:deliveryId/redeliver", async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhookId = pathId(request);
    const delivery = await findDelivery(app.db, pathId(request, "deliveryId"), organization.id);
    if (delivery.webhookId !== webhookId) {
      throw new PageError(404, "Not found", "There is no such delivery.");
    }
    // Each request is a new manual attempt (same delivery id, fresh timestamp and signature).
    await enqueueAttempt(app.queue, delivery.id, "manual", { jobKey: `m${Date.now()}` });
    leaveNotice(request, "Redelivery queued.");
    return reply.redirect(webhookPath(request, webhookId), 303);
  });
}
