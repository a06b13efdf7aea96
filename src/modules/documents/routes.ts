import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf, writerOf } from "../../http/auth.js";
import { ok, sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { withWriteEffect } from "../change-events/write-effects.js";
import {
  documentIdParams,
  documentIdSchema,
  documentLinkInput,
  documentListQuery,
  documentPatch,
  documentSchema,
} from "./schemas.js";
import { createDocumentLink, listDocuments, updateDocument } from "./service.js";

const LIST_ORDER =
  "Newest first (`createdAt` descending; among documents filed at the same instant, the last filed first). `category` filters; other query parameters are ignored.";

const CREATE_LINK =
  "Files a link (`kind` `link`, `uploadedBy` the token's user); files cannot be uploaded through the API.";

export const documentRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/documents",
    apiRoute({
      access: "documents:read",
      operationId: "listTeamDocuments",
      summary: "The team-level document library",
      description: `Documents that belong to no project. ${LIST_ORDER}`,
      tags: ["Documents"],
      querystring: documentListQuery,
      data: z.array(documentSchema),
    }),
    async (request, reply) =>
      sendJsonData(
        reply,
        await listDocuments(app.db, organizationOf(request), { kind: "team" }, request.query),
      ),
  );

  app.get(
    "/projects/:slug/documents",
    apiRoute({
      access: "documents:read",
      operationId: "listProjectDocuments",
      summary: "A project's document library",
      description: LIST_ORDER,
      tags: ["Documents"],
      params: projectSlugParams,
      querystring: documentListQuery,
      data: z.array(documentSchema),
    }),
    async (request, reply) =>
      sendJsonData(
        reply,
        await listDocuments(
          app.db,
          organizationOf(request),
          { kind: "project", slug: request.params.slug },
          request.query,
        ),
      ),
  );

  app.post(
    "/documents",
    apiRoute({
      access: "documents:write",
      operationId: "createTeamDocumentLink",
      summary: "Add a link to the team-level library",
      description: withWriteEffect("createTeamDocumentLink", CREATE_LINK),
      tags: ["Documents"],
      body: documentLinkInput,
      data: documentIdSchema,
    }),
    async (request) =>
      ok(await createDocumentLink(app.db, { kind: "team" }, writerOf(request), request.body)),
  );

  app.post(
    "/projects/:slug/documents",
    apiRoute({
      access: "documents:write",
      operationId: "createProjectDocumentLink",
      summary: "Add a link to a project's library",
      description: withWriteEffect("createProjectDocumentLink", CREATE_LINK),
      tags: ["Documents"],
      params: projectSlugParams,
      body: documentLinkInput,
      data: documentIdSchema,
    }),
    async (request) =>
      ok(
        await createDocumentLink(
          app.db,
          { kind: "project", slug: request.params.slug },
          writerOf(request),
          request.body,
        ),
      ),
  );

  app.patch(
    "/documents/:document_id",
    apiRoute({
      access: "documents:write",
      operationId: "updateDocument",
      summary: "Edit a document's title or description",
      description: withWriteEffect(
        "updateDocument",
        "Only `title` and `description` can change (`null` clears the description); the link target, category and kind cannot, and sending them is refused. Team-level documents and those of visible projects are reachable; a document of a private project or another organisation answers 404 like an unknown id.",
      ),
      tags: ["Documents"],
      params: documentIdParams,
      body: documentPatch,
      data: documentIdSchema,
    }),
    async (request) =>
      ok(await updateDocument(app.db, request.params.document_id, writerOf(request), request.body)),
  );
};
