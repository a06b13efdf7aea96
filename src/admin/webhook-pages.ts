import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { Config } from "../config.js";
import { ApiError, NotFound } from "../core/errors.js";
import { id } from "../core/values.js";
import { changeEventCatalogue } from "../modules/change-events/catalogue.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import {
  type DeliveryStatus,
  decodeCursor,
  deliveryActivity,
  deliveryLogPage,
  deliveryStatuses,
  encodeCursor,
  type LogCursor,
} from "../webhooks/delivery-log.js";
import { enqueueAttempt, queuePing, queueRetryPass } from "../webhooks/enqueue-attempts.js";
import { reviveExhaustedDeliveries } from "../webhooks/retry-pass.js";
import {
  createWebhook,
  deleteWebhook,
  findWebhook,
  lastAnswerText,
  listWebhooks,
  recordRedelivery,
  registrationSettingsOf,
  rotateWebhookSecret,
  setWebhookEnabled,
  unsentDeliveriesOf,
  updateWebhook,
} from "../webhooks/service.js";
import { describeWebhookUrlRule, webhookNetworkOf } from "../webhooks/url-policy.js";
import {
  adminContextOf,
  auditContextOf,
  listPage,
  refusedFieldByPrefix,
  renderAdminPage,
  sectionPath,
  showingRefusals,
} from "./context.js";
import { buildChart, formatRate } from "./delivery-chart.js";
import { checkboxList, formText, organizationParams, recordParams } from "./form-schemas.js";
import { webhookEventsLabel } from "./webhook-events-label.js";

const eventChoices = changeEventCatalogue.map((entry) => ({
  type: entry.type,
  targetKind: entry.targetKind,
}));

type WebhookForm = { url: string; events: string[] };

// The shape only: registering checks the URL and the event types with its own messages.
const webhookFormBody = z.object({ url: formText, events: checkboxList });

const refusedWebhookField = refusedFieldByPrefix({ "url:": "url", "events:": "events" });

const webhookList = listPage<WebhookForm>(
  "webhooks",
  "Webhooks",
  { url: "", events: [] },
  async (request, organizationId) => ({
    webhooks: await listWebhooks(request.server.db, organizationId),
    lastAnswerText,
    formatRate,
    eventChoices,
    eventsLabel: webhookEventsLabel,
    urlRule: describeWebhookUrlRule(webhookNetworkOf(request.server.config)),
  }),
  refusedWebhookField,
);

/** The edit form, filled from the webhook or from a refused submission, with its refusal. */
async function renderEditForm(
  request: FastifyRequest,
  reply: FastifyReply,
  webhookId: string,
  form: WebhookForm | null,
  error: string | null = null,
) {
  const { organization } = adminContextOf(request);
  const webhook = await findWebhook(request.server.db, webhookId, organization.id);
  const subscribed = form ?? {
    url: webhook.url,
    events:
      (await listWebhooks(request.server.db, organization.id)).find(
        (candidate) => candidate.id === webhookId,
      )?.events ?? [],
  };
  return renderAdminPage(
    request,
    reply,
    "webhooks",
    "admin/webhook-edit",
    {
      title: "Edit webhook",
      webhookId,
      form: subscribed,
      eventChoices,
      urlRule: describeWebhookUrlRule(webhookNetworkOf(request.server.config)),
      error,
      errorField: error === null ? null : refusedWebhookField(error),
    },
    error === null ? 200 : 400,
  );
}

const LOG_PAGE_SIZE = 25;

type LogPosition = { direction: "older" | "newer"; cursor: LogCursor };

type LogFilters = {
  status: DeliveryStatus | null;
  eventType: string | null;
  after: LogPosition | null;
};

/** A filter the form leaves empty ("any") filters nothing, as one left out does. */
function unlessEmpty<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (value === "" ? undefined : value), schema.optional());
}

const logCursor = z.string({ error: "must be sent once" }).transform((text, context) => {
  const cursor = decodeCursor(text);
  if (cursor === null) {
    context.addIssue({ code: "custom", message: "is not a position in this log" });
    return z.NEVER;
  }
  return cursor;
});

/** The log's filters and position, in the shape the filter form and the page links send. */
const logQuery = z
  .object({
    status: unlessEmpty(z.enum(deliveryStatuses, { error: "is not a delivery status" })),
    event: unlessEmpty(z.string({ error: "must be sent once" })),
    before: unlessEmpty(logCursor),
    after: unlessEmpty(logCursor),
  })
  .refine((query) => query.before === undefined || query.after === undefined, {
    path: ["after"],
    message: "cannot be sent with before",
  });

/** The parsed query as the log's filters; an event type the webhook cannot receive is refused. */
function filtersOfQuery(query: z.output<typeof logQuery>, eventTypes: string[]): LogFilters {
  const eventType = query.event ?? null;
  if (eventType !== null && !eventTypes.includes(eventType)) {
    throw new PageError(400, "Request not accepted", "event: is not an event type of this webhook");
  }
  const position: LogPosition | null =
    query.before !== undefined
      ? { direction: "older", cursor: query.before }
      : query.after !== undefined
        ? { direction: "newer", cursor: query.after }
        : null;
  return { status: query.status ?? null, eventType, after: position };
}

function webhookPath(request: FastifyRequest, webhookId: string): string {
  return `${sectionPath(request, "webhooks")}/${webhookId}`;
}

/**
 * Webhooks on the webhook service: register (event checkboxes, secret shown once), enable and
 * disable, the delivery log with attempts and response codes, redeliver and ping. Sending is
 * the worker's: the pages only record the delivery and queue its attempt.
 */
function deliveriesText(count: number): string {
  return `${count} ${count === 1 ? "delivery" : "deliveries"}`;
}

/** What a retry pass queued; past the queue's window the rest follows from the worker. */
function queuedText({ claimed, full }: { claimed: number; full: boolean }, kind = ""): string {
  const noun = claimed === 1 ? "delivery" : "deliveries";
  const queued = `${claimed} ${kind}${noun} queued for another attempt`;
  return full ? `${queued}; the rest follow as the queue has room` : queued;
}

/** The pass also takes the webhook's failed deliveries that still had passes left. */
function exhaustedRetryNotice(revived: number, pass: { claimed: number; full: boolean }): string {
  return `${deliveriesText(revived)} taken back from exhausted; ${queuedText(pass)}.`;
}

export const webhookPages: FastifyPluginAsyncZod<{ config: Config }> = async (app, options) => {
  const settings = registrationSettingsOf(options.config);

  app.get("/:org/webhooks", { schema: { params: organizationParams } }, async (request, reply) =>
    webhookList(request, reply),
  );

  const registerSchema = { params: organizationParams, body: webhookFormBody };
  app.post("/:org/webhooks", { schema: registerSchema }, async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const form: WebhookForm = { url: request.body.url.trim(), events: request.body.events };
    return showingRefusals(request, reply, webhookList, form, async () => {
      const created = await createWebhook(app.db, auditContextOf(request), settings, {
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

  const detailSchema = { params: recordParams, querystring: logQuery };
  app.get("/:org/webhooks/:id", { schema: detailSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhookId = request.params.id;
    const webhook = (await listWebhooks(app.db, organization.id)).find(
      (candidate) => candidate.id === webhookId,
    );
    if (webhook === undefined) throw new PageError(404, "Not found", "There is no such webhook.");
    // A ping is a change.created delivery, whatever the webhook subscribes to.
    const eventTypes = [...new Set([...webhook.events, "change.created"])];
    const filters = filtersOfQuery(request.query, eventTypes);
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
    const pageLink = (position: LogPosition | null) => {
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
      eventsLabel: webhookEventsLabel,
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

  const webhookSchema = { params: recordParams };
  for (const [action, enabled] of [
    ["enable", true],
    ["disable", false],
  ] as const) {
    app.post(`/:org/webhooks/:id/${action}`, { schema: webhookSchema }, async (request, reply) => {
      const { organization } = adminContextOf(request);
      const webhookId = request.params.id;
      await setWebhookEnabled(app.db, auditContextOf(request), {
        id: webhookId,
        enabled,
        organizationId: organization.id,
      });
      leaveNotice(request, enabled ? "Webhook enabled." : "Webhook disabled.");
      return reply.redirect(webhookPath(request, webhookId), 303);
    });
  }

  app.get("/:org/webhooks/:id/edit", { schema: webhookSchema }, async (request, reply) =>
    renderEditForm(request, reply, request.params.id, null),
  );

  // Registration's rules: a new URL is checked against the SSRF policy again.
  const editSchema = { params: recordParams, body: webhookFormBody };
  app.post("/:org/webhooks/:id/edit", { schema: editSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhookId = request.params.id;
    const form: WebhookForm = { url: request.body.url.trim(), events: request.body.events };
    try {
      await updateWebhook(app.db, settings, {
        id: webhookId,
        organizationId: organization.id,
        ...form,
      });
    } catch (error) {
      if (error instanceof ApiError && error.statusCode === 400) {
        return renderEditForm(request, reply, webhookId, form, error.message);
      }
      throw error;
    }
    request.log.info({ webhookId }, "webhook updated");
    leaveNotice(request, "Webhook updated.");
    return reply.redirect(webhookPath(request, webhookId), 303);
  });

  app.post(
    "/:org/webhooks/:id/rotate-secret",
    { schema: webhookSchema },
    async (request, reply) => {
      const { organization } = adminContextOf(request);
      const webhook = await findWebhook(app.db, request.params.id, organization.id);
      const rotated = await rotateWebhookSecret(
        app.db,
        auditContextOf(request),
        settings.secretKey,
        {
          id: webhook.id,
          organizationId: organization.id,
        },
      );
      request.log.info({ webhookId: webhook.id }, "webhook signing secret replaced");
      return renderAdminPage(request, reply, "webhooks", "admin/webhook-created", {
        title: "Signing secret replaced",
        webhookId: webhook.id,
        url: webhook.url,
        secret: rotated.secret,
        replaced: true,
      });
    },
  );

  // Deleting asks first, showing the unsent deliveries it would drop.
  app.get("/:org/webhooks/:id/delete", { schema: webhookSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhook = await findWebhook(app.db, request.params.id, organization.id);
    const unsent = await unsentDeliveriesOf(app.db, {
      id: webhook.id,
      organizationId: organization.id,
    });
    return renderAdminPage(request, reply, "webhooks", "admin/webhook-delete", {
      title: "Delete webhook",
      webhook,
      unsent,
    });
  });

  app.post("/:org/webhooks/:id/delete", { schema: webhookSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhookId = request.params.id;
    const dropped = await deleteWebhook(app.db, { id: webhookId, organizationId: organization.id });
    request.log.info({ webhookId, dropped }, "webhook deleted");
    leaveNotice(
      request,
      `Webhook deleted; dropped ${deliveriesText(dropped.due)} that were due and ${deliveriesText(dropped.held)} held.`,
    );
    return reply.redirect(sectionPath(request, "webhooks"), 303);
  });

  // The same pass as the daily one and `svc webhook retry-failed`, for this organisation only.
  const retrySchema = { params: organizationParams };
  app.post("/:org/webhooks/retry-failed", { schema: retrySchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const pass = await queueRetryPass(app, { organizationId: organization.id });
    request.log.info({ deliveries: pass.claimed, full: pass.full }, "webhook retry pass queued");
    leaveNotice(request, `${queuedText(pass, "failed ")}.`);
    return reply.redirect(sectionPath(request, "webhooks"), 303);
  });

  // `svc webhook retry-failed --include-exhausted` for one webhook: its pass follows at once.
  app.post(
    "/:org/webhooks/:id/retry-exhausted",
    { schema: webhookSchema },
    async (request, reply) => {
      const { organization } = adminContextOf(request);
      const scope = { organizationId: organization.id, webhookId: request.params.id };
      await findWebhook(app.db, scope.webhookId, scope.organizationId);
      const revived = await reviveExhaustedDeliveries(app.db, scope);
      const pass = await queueRetryPass(app, scope);
      request.log.info(
        { revived, deliveries: pass.claimed, full: pass.full },
        "exhausted webhook deliveries revived",
      );
      leaveNotice(request, exhaustedRetryNotice(revived, pass));
      return reply.redirect(webhookPath(request, scope.webhookId), 303);
    },
  );

  app.post("/:org/webhooks/:id/ping", { schema: webhookSchema }, async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const webhookId = request.params.id;
    await queuePing(
      { db: app.db, queue: app.queue, logger: request.log },
      { organizationId: organization.id, webhookId, actorId: user.id },
    );
    leaveNotice(request, "Ping queued: a change.created delivery is on its way.");
    return reply.redirect(webhookPath(request, webhookId), 303);
  });

  const redeliverSchema = { params: recordParams.extend({ deliveryId: id }) };
  const redeliverPath = "/:org/webhooks/:id/deliveries/:deliveryId/redeliver";
  app.post(redeliverPath, { schema: redeliverSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const webhookId = request.params.id;
    const delivery = await recordRedelivery(app.db, auditContextOf(request), {
      deliveryId: request.params.deliveryId,
      organizationId: organization.id,
      webhookId,
    }).catch((error: unknown) => {
      if (error instanceof NotFound) {
        throw new PageError(404, "Not found", "There is no such delivery.");
      }
      throw error;
    });
    // Each request is a new manual attempt (same delivery id, fresh timestamp and signature).
    await enqueueAttempt(app.queue, delivery.id, "manual", { jobKey: `m${Date.now()}` });
    leaveNotice(request, "Redelivery queued.");
    return reply.redirect(webhookPath(request, webhookId), 303);
  });
};
