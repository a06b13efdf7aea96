import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  deleteAddon,
  findAddonDevelopedBy,
  listAddonsDevelopedBy,
  registerAddon,
  rotateClientSecret,
  updateAddon,
} from "../oauth/addons.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import {
  adminContextOf,
  auditContextOf,
  type ListPage,
  listPage,
  refusedFieldByPrefix,
  renderAdminPage,
  sectionPath,
  showingRefusals,
} from "./context.js";
import { formText, organizationParams, recordParams } from "./form-schemas.js";

type AddonForm = { name: string; redirectUris: string; isPublic: boolean };

// The shape only: registering checks the name and each redirect URI with its own messages.
const addonFormBody = z.object({ name: formText, redirect_uris: formText, public: formText });

type AddonEditForm = { name: string; redirectUris: string };

// The shape only: updating checks the name and each redirect URI as registering does.
const addonEditBody = z.object({ name: formText, redirect_uris: formText });

const refusedAddonField = refusedFieldByPrefix({
  "name:": "name",
  "redirect URI": "redirect_uris",
});

function redirectUriLines(text: string): string[] {
  return text.split(/\r?\n/).filter((line) => line.trim() !== "");
}

const NO_SUCH_ADDON = "There is no such addon, or it has been deleted.";

async function addonOf(request: FastifyRequest, id: string) {
  const { organization } = adminContextOf(request);
  const addon = await findAddonDevelopedBy(request.server.db, organization.id, id);
  if (addon === null) throw new PageError(404, "Not found", NO_SUCH_ADDON);
  return addon;
}

/** One addon's page: its edit form (shown again with a refusal), new secret and delete. */
function addonPage(id: string): ListPage<AddonEditForm | undefined> {
  return async (request, reply, form, error = null) => {
    const addon = await addonOf(request, id);
    const message = typeof error === "string" ? error : (error?.message ?? null);
    const errorField =
      error === null ? null : typeof error === "string" ? refusedAddonField(error) : error.field;
    return renderAdminPage(
      request,
      reply,
      "addons",
      "admin/addon",
      {
        title: addon.name,
        addon,
        form: form ?? { name: addon.name, redirectUris: addon.redirectUris.join("\n") },
        error: message,
        errorField,
      },
      error ? 400 : 200,
    );
  };
}

const addonList = listPage<AddonForm>(
  "addons",
  "Your addons",
  { name: "", redirectUris: "", isPublic: false },
  async (request, organizationId) => ({
    addons: await listAddonsDevelopedBy(request.server.db, organizationId),
  }),
  refusedAddonField,
);

/**
 * The addons the organisation develops, each registered as an OAuth client: list, register
 * (secret shown once), edit, replace the secret and delete. The section's first address,
 * `/apps`, still leads here.
 */
export const addonPages: FastifyPluginAsyncZod = async (app) => {
  app.get("/:org/addons", { schema: { params: organizationParams } }, async (request, reply) =>
    addonList(request, reply),
  );
  app.get("/:org/apps", { schema: { params: organizationParams } }, async (request, reply) =>
    reply.redirect(`/admin/${adminContextOf(request).organization.slug}/addons`, 301),
  );

  const registerSchema = { params: organizationParams, body: addonFormBody };
  app.post("/:org/addons", { schema: registerSchema }, async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const form: AddonForm = {
      name: request.body.name,
      redirectUris: request.body.redirect_uris,
      isPublic: request.body.public === "yes",
    };
    return showingRefusals(request, reply, addonList, form, async () => {
      const registered = await registerAddon(app.db, auditContextOf(request), {
        organizationId: organization.id,
        name: form.name,
        redirectUris: redirectUriLines(form.redirectUris),
        isPublic: form.isPublic,
        createdBy: user.id,
      });
      return renderAdminPage(request, reply, "addons", "admin/addon-registered", {
        title: "Addon registered",
        name: form.name.trim(),
        clientId: registered.clientId,
        clientSecret: registered.clientSecret,
      });
    });
  });

  app.get("/:org/addons/:id", { schema: { params: recordParams } }, async (request, reply) =>
    addonPage(request.params.id)(request, reply),
  );

  const updateSchema = { params: recordParams, body: addonEditBody };
  app.post("/:org/addons/:id", { schema: updateSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const form: AddonEditForm = {
      name: request.body.name,
      redirectUris: request.body.redirect_uris,
    };
    const page = addonPage(request.params.id);
    return showingRefusals(request, reply, page, form, async () => {
      const updated = await updateAddon(
        app.db,
        { id: request.params.id, organizationId: organization.id },
        { name: form.name, redirectUris: redirectUriLines(form.redirectUris) },
      );
      if (!updated) throw new PageError(404, "Not found", NO_SUCH_ADDON);
      leaveNotice(request, "Addon updated.");
      return reply.redirect(`${sectionPath(request, "addons")}/${request.params.id}`, 303);
    });
  });

  const recordSchema = { params: recordParams };
  app.post("/:org/addons/:id/rotate-secret", { schema: recordSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const page = addonPage(request.params.id);
    return showingRefusals(request, reply, page, undefined, async () => {
      const rotated = await rotateClientSecret(app.db, auditContextOf(request), {
        id: request.params.id,
        organizationId: organization.id,
      });
      if (rotated === null) throw new PageError(404, "Not found", NO_SUCH_ADDON);
      return renderAdminPage(request, reply, "addons", "admin/addon-secret", {
        title: "New client secret",
        addonId: request.params.id,
        clientId: rotated.clientId,
        clientSecret: rotated.clientSecret,
      });
    });
  });

  // The confirmation is a page of its own, so it works without JavaScript (the CSP has none).
  app.get("/:org/addons/:id/delete", { schema: recordSchema }, async (request, reply) => {
    const addon = await addonOf(request, request.params.id);
    return renderAdminPage(request, reply, "addons", "admin/addon-delete", {
      title: `Delete ${addon.name}?`,
      addon,
    });
  });

  app.post("/:org/addons/:id/delete", { schema: recordSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const deleted = await deleteAddon(app.db, {
      id: request.params.id,
      organizationId: organization.id,
    });
    leaveNotice(
      request,
      deleted
        ? "Addon deleted: every grant and token it held is revoked."
        : "That addon was already deleted.",
    );
    return reply.redirect(sectionPath(request, "addons"), 303);
  });
};
