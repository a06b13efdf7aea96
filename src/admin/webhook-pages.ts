import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { changeEventCatalogue } from "../modules/change-events/catalogue.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import { enqueueAttempt, queuePing, queueRetryPass } from "../webhooks/jobs.js";
import {
  createWebhook,
  findDelivery,
  listDeliveries,
  listWebhooks,
  setWebhookEnabled,
} from "../webhooks/service.js";
import {
  adminContextOf,
  formField,
  formList,
  listPage,
  pathId,
  renderAdminPage,
  sectionPath,
  showingRefusals,
} from "./context.js";

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
);

function webhookPath(request: FastifyRequest, webhookId: string): string {
  return `${sectionPath(request, "webhooks")}/${webhookId}`;
}

/**
 * Webhooks on the webhook service: register (event checkboxes, secret shown once), enable and
 * disable, the delivery log with attempts and response codes, redeliver and ping. Sending is
 * the worker's: the pages only record the delivery and queue its attempt.
 */
export async function webhookPages(app: FastifyInstance, options: { config: Config }) {
  const settings = { secretKey: options.config.secretKey, production: options.config.isProduction };

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
    const deliveries = await listDeliveries(app.db, {
      webhookId,
      organizationId: organization.id,
    });
    return renderAdminPage(request, reply, "webhooks", "admin/webhook", {
      title: "Webhook deliveries",
      webhook,
      deliveries,
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
    const queued = await queueRetryPass(
      { db: app.db, config: app.config, logger: request.log, queue: app.queue },
      organization.id,
    );
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
