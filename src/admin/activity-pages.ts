import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { auditActionSchema, auditActions, listAuditEntries } from "../modules/audit/service.js";
import { decodeCursor, encodeCursor } from "../webhooks/delivery-log.js";
import { adminContextOf, renderAdminPage } from "./context.js";
import { organizationParams } from "./form-schemas.js";

const ACTIVITY_PAGE_SIZE = 50;

/** A filter the form leaves empty ("any") filters nothing, as one left out does. */
function unlessEmpty<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (value === "" ? undefined : value), schema.optional());
}

const activityQuery = z.object({
  action: unlessEmpty(auditActionSchema),
  actor: unlessEmpty(z.string({ error: "must be sent once" }).max(320)),
  before: unlessEmpty(
    z.string({ error: "must be sent once" }).transform((text, context) => {
      const cursor = decodeCursor(text);
      if (cursor === null) {
        context.addIssue({ code: "custom", message: "is not a position in this log" });
        return z.NEVER;
      }
      return cursor;
    }),
  ),
});

/** Activity: the organisation's audit log, newest first, filtered by action and actor, paged. */
export const activityPages: FastifyPluginAsyncZod = async (app) => {
  const schema = { params: organizationParams, querystring: activityQuery };
  app.get("/:org/activity", { schema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const { action = null, actor = null, before = null } = request.query;
    const log = await listAuditEntries(app.db, {
      organizationId: organization.id,
      action,
      actor,
      before,
      limit: ACTIVITY_PAGE_SIZE,
    });
    const link = (position: string | null) => {
      const query = new URLSearchParams();
      if (action !== null) query.set("action", action);
      if (actor !== null) query.set("actor", actor);
      if (position !== null) query.set("before", position);
      const text = query.toString();
      return `/admin/${organization.slug}/activity${text === "" ? "" : `?${text}`}`;
    };
    return renderAdminPage(request, reply, "activity", "admin/activity", {
      title: "Activity",
      entries: log.entries,
      actions: auditActions,
      filters: { action, actor },
      links: {
        older: log.older === null ? null : link(encodeCursor(log.older)),
        newest: before === null ? null : link(null),
      },
      formatJson: (value: unknown) => JSON.stringify(value),
    });
  });
};
