import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { authorOf, principalOf } from "../../http/auth.js";
import { projectSlugParams } from "../../http/common-schemas.js";
import { ok } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import {
  createdPageSchema,
  createPageBody,
  pageIdParams,
  pageSchema,
  pageSummarySchema,
  updatedPageSchema,
  updatePageBody,
} from "./schemas.js";
import { createPage, getPage, listPages, updatePage } from "./service.js";

const NOT_VISIBLE =
  "A page of a private project or of another organisation answers 404 exactly like an unknown id.";

export const pageRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/projects/:slug/pages",
    apiRoute({
      access: "pages:read",
      operationId: "listPages",
      summary: "The project's page tree, without bodies",
      description:
        "Depth-first pre-order: each page comes right after its parent and before its parent's next child; siblings are ordered by position, then title, then creation order. Rebuild the tree from `parentId`.",
      tags: ["Pages"],
      params: projectSlugParams,
      data: z.array(pageSummarySchema),
    }),
    async (request) =>
      ok(await listPages(app.db, principalOf(request).organization.id, request.params.slug)),
  );

  app.get(
    "/pages/:page_id",
    apiRoute({
      access: "pages:read",
      operationId: "getPage",
      summary: "One page, its body as plain text",
      description: NOT_VISIBLE,
      tags: ["Pages"],
      params: pageIdParams,
      data: pageSchema,
    }),
    async (request) =>
      ok(await getPage(app.db, principalOf(request).organization.id, request.params.page_id)),
  );

  app.post(
    "/projects/:slug/pages",
    apiRoute({
      access: "pages:write",
      operationId: "createPage",
      summary: "Create a page from markdown",
      description:
        "The page goes last among its siblings. `parent_page_id` must name a page of the same project (400 otherwise). Adds the first revision, attributed to the token's user, and records `page.created`.",
      tags: ["Pages"],
      params: projectSlugParams,
      body: createPageBody,
      data: createdPageSchema,
    }),
    async (request) => {
      const { principal, authorId } = authorOf(request);
      return ok(
        await createPage(app.db, request.params.slug, {
          organizationId: principal.organization.id,
          authorId,
          input: request.body,
        }),
      );
    },
  );

  app.patch(
    "/pages/:page_id",
    apiRoute({
      access: "pages:write",
      operationId: "updatePage",
      summary: "Edit a page's title or body",
      description: `Only the fields sent change. \`markdown\` replaces the body, or with \`mode: "append"\` is added below a divider; \`mode\` without \`markdown\` is refused. An edit adds a revision attributed to the token's user and records \`page.updated\`; an edit that changes nothing writes nothing and returns the current \`updatedAt\`. ${NOT_VISIBLE}`,
      tags: ["Pages"],
      params: pageIdParams,
      body: updatePageBody,
      data: updatedPageSchema,
    }),
    async (request) => {
      const { principal, authorId } = authorOf(request);
      return ok(
        await updatePage(app.db, request.params.page_id, {
          organizationId: principal.organization.id,
          authorId,
          input: request.body,
        }),
      );
    },
  );
};
