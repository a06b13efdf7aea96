import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf } from "../../http/auth.js";
import { sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { milestoneSchema } from "./schemas.js";
import { listMilestones } from "./service.js";

export const milestoneRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/projects/:slug/milestones",
    apiRoute({
      access: "milestones:read",
      operationId: "listMilestones",
      summary: "List a project's milestones",
      description:
        "Ordered by targetDate (earliest first), then name, then creation order. An unknown, foreign or private project answers 404.",
      tags: ["Milestones"],
      params: projectSlugParams,
      data: z.array(milestoneSchema),
    }),
    async (request, reply) =>
      sendJsonData(
        reply,
        await listMilestones(app.db, organizationOf(request), request.params.slug),
      ),
  );
};
