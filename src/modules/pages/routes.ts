import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf, writerOf } from "../../http/auth.js";
import { ok, sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { withWriteEffect } from "../change-events/write-effects.js";
import {
  createdPageSchema,
  createPageBody,
  pageIdParams,
  pageSchema,
  pageSummarySchema,
  updatedPageSchema,
  updatePageBody,
} from "./schemas.js";
import { createPage, getPage, listPages, type PageWriting, updatePage } from "./service.js";

const NOT_VISIBLE =
  "A page of a private project or of another organisation answers 404 exactly like an unknown id.";

export const pageRoutes: FastifyPluginAsyncZod = async (app) => {
  const writing: PageWriting = {
    markdown: app.markdown,
    revisionsKept: app.config.pageRevisionsKept,
  };
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
    async (request, reply) =>
      sendJsonData(reply, await listPages(app.db, organizationOf(request), request.params.slug)),
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
    async (request) => ok(await getPage(app.db, organizationOf(request), request.params.page_id)),
  );

  app.post(
    "/projects/:slug/pages",
    apiRoute({
      access: "pages:write",
      operationId: "createPage",
      summary: "Create a page from markdown",
      description: withWriteEffect(
        "createPage",
        "The page goes last among its siblings. `parent_page_id` must name a page of the same project (400 otherwise).",
      ),
      tags: ["Pages"],
      params: projectSlugParams,
      body: createPageBody,
      data: createdPageSchema,
    }),
    async (request) =>
      ok(await createPage(app.db, writing, request.params.slug, writerOf(request), request.body)),
  );

  app.patch(
    "/pages/:page_id",
    apiRoute({
      access: "pages:write",
      operationId: "updatePage",
      summary: "Edit a page's title or body",
      description: withWriteEffect(
        "updatePage",
        `Only the fields sent change. \`markdown\` replaces the body, or with \`mode: "append"\` is added below a divider; \`mode\` without \`markdown\` is refused. ${NOT_VISIBLE}`,
      ),
      tags: ["Pages"],
      params: pageIdParams,
      body: updatePageBody,
      data: updatedPageSchema,
    }),
    async (request) =>
      ok(
        await updatePage(app.db, writing, request.params.page_id, writerOf(request), request.body),
      ),
  );
};
