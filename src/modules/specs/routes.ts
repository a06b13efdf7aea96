import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf } from "../../http/auth.js";
import { sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { specSchema } from "./schemas.js";
import { listSpecs } from "./service.js";

export const specRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/projects/:slug/specs",
    apiRoute({
      access: "specs:read",
      operationId: "listSpecs",
      summary: "List a project's specifications with their latest published version",
      description:
        "Ordered by name, then slug. `latest` is the most recently published version (drafts never appear), or null. An unknown, foreign or private project answers 404.",
      tags: ["Specifications"],
      params: projectSlugParams,
      data: z.array(specSchema),
    }),
    async (request, reply) =>
      sendJsonData(reply, await listSpecs(app.db, organizationOf(request), request.params.slug)),
  );
};
