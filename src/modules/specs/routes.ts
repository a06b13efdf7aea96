import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { principalOf } from "../../http/auth.js";
import { projectSlugParams } from "../../http/common-schemas.js";
import { ok } from "../../http/envelope.js";
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
    async (request) =>
      ok(await listSpecs(app.db, principalOf(request).organization.id, request.params.slug)),
  );
};
