import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf } from "../../http/auth.js";
import { ok, sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { projectDetailSchema, projectSchema } from "./schemas.js";
import { getProject, listProjects } from "./service.js";

export const projectRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/projects",
    apiRoute({
      access: "projects:read",
      operationId: "listProjects",
      summary: "List the organisation's projects",
      description: "Private projects are never listed. Ordered by name, then slug.",
      tags: ["Projects"],
      data: z.array(projectSchema),
    }),
    async (request, reply) =>
      sendJsonData(reply, await listProjects(app.db, organizationOf(request))),
  );

  app.get(
    "/projects/:slug",
    apiRoute({
      access: "projects:read",
      operationId: "getProject",
      summary: "One project, with its id",
      description:
        "An unknown slug, a project of another organisation and a private project all answer 404.",
      tags: ["Projects"],
      params: projectSlugParams,
      data: projectDetailSchema,
    }),
    async (request) => ok(await getProject(app.db, organizationOf(request), request.params.slug)),
  );
};
