import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { writerOf } from "../http/auth.js";
import { ok } from "../http/envelope.js";
import { apiRoute } from "../http/route-schema.js";
import { withWriteEffect } from "../modules/change-events/write-effects.js";
import { queuePing } from "./enqueue-attempts.js";
import { pingInputSchema, pingResultSchema } from "./schemas.js";

export const webhookRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    "/webhooks/ping",
    apiRoute({
      access: "webhooks:manage",
      operationId: "pingWebhook",
      summary: "Send a test delivery to a webhook",
      description: withWriteEffect(
        "pingWebhook",
        "Queues a synthetic `change.created` delivery to the named webhook of this organisation, through the same signed pipeline as every other delivery; it works on a disabled webhook too. A webhook that is unknown or of another organisation answers 400.",
      ),
      tags: ["Webhooks"],
      body: pingInputSchema,
      data: pingResultSchema,
    }),
    async (request) => {
      const { organizationId, authorId, traceContext } = writerOf(request);
      await queuePing(
        { db: app.db, queue: app.queue, logger: request.log },
        { organizationId, webhookId: request.body.webhook_id, actorId: authorId, traceContext },
      );
      return ok({ status: "queued" as const });
    },
  );
};
