import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { listAddonsDevelopedBy, registerAddon } from "../oauth/addons.js";
import {
  adminContextOf,
  listPage,
  refusedFieldByPrefix,
  renderAdminPage,
  showingRefusals,
} from "./context.js";
import { formText, organizationParams } from "./form-schemas.js";

type AddonForm = { name: string; redirectUris: string; isPublic: boolean };

// The shape only: registering checks the name and each redirect URI with its own messages.
const addonFormBody = z.object({ name: formText, redirect_uris: formText, public: formText });

const addonList = listPage<AddonForm>(
  "addons",
  "Your addons",
  { name: "", redirectUris: "", isPublic: false },
  async (request, organizationId) => ({
    addons: await listAddonsDevelopedBy(request.server.db, organizationId),
  }),
  refusedFieldByPrefix({ "name:": "name", "redirect URI": "redirect_uris" }),
);

/**
 * The addons the organisation develops, each registered as an OAuth client: list and register
 * (secret shown once). The section's first address, `/apps`, still leads here.
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
      const registered = await registerAddon(app.db, {
        organizationId: organization.id,
        name: form.name,
        redirectUris: form.redirectUris.split(/\r?\n/).filter((line) => line.trim() !== ""),
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
};
