import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../http/errors.js";
import { createOAuthClient, listClientsDevelopedBy } from "../oauth/clients.js";
import { adminContextOf, formField, renderAdminPage } from "./context.js";

type AppForm = { name: string; redirectUris: string; isPublic: boolean };

async function renderAppList(
  request: FastifyRequest,
  reply: FastifyReply,
  form: AppForm = { name: "", redirectUris: "", isPublic: false },
  error: string | null = null,
) {
  const { organization } = adminContextOf(request);
  const clients = await listClientsDevelopedBy(request.server.db, organization.id);
  return renderAdminPage(
    request,
    reply,
    "apps",
    "admin/apps",
    { title: "OAuth apps", clients, form, error },
    error === null ? 200 : 400,
  );
}

/** The OAuth apps (addons) the organisation develops: list and register (secret shown once). */
export async function appPages(app: FastifyInstance) {
  app.get("/:org/apps", async (request, reply) => renderAppList(request, reply));

  app.post("/:org/apps", async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const form: AppForm = {
      name: formField(request, "name"),
      redirectUris: formField(request, "redirect_uris"),
      isPublic: formField(request, "public") === "yes",
    };
    try {
      const created = await createOAuthClient(app.db, {
        organizationId: organization.id,
        name: form.name,
        redirectUris: form.redirectUris.split(/\r?\n/).filter((line) => line.trim() !== ""),
        isPublic: form.isPublic,
        createdBy: user.id,
      });
      return renderAdminPage(request, reply, "apps", "admin/app-created", {
        title: "OAuth app registered",
        name: form.name.trim(),
        clientId: created.clientId,
        clientSecret: created.clientSecret,
      });
    } catch (error) {
      if (error instanceof ApiError && error.statusCode === 400) {
        return renderAppList(request, reply, form, error.message);
      }
      throw error;
    }
  });
}
