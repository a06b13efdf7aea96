import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf } from "../../http/auth.js";
import { sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { componentSchema } from "./schemas.js";
import { listComponents } from "./service.js";

export const componentRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/projects/:slug/components",
    apiRoute({
      access: "components:read",
      operationId: "listComponents",
      summary: "List a project's components with their latest published version",
      description:
        "Ordered by name, then slug. `latest` is the most recently published version (the highest in creation order among versions with status `published`), or null. An unknown, foreign or private project answers 404.",
      tags: ["Components"],
      params: projectSlugParams,
      data: z.array(componentSchema),
    }),
    async (request, reply) =>
      sendJsonData(
        reply,
        await listComponents(app.db, organizationOf(request), request.params.slug),
      ),
  );
};
