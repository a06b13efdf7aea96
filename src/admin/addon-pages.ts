import type { FastifyInstance } from "fastify";
import { listAddonsDevelopedBy, registerAddon } from "../oauth/addons.js";
import {
  adminContextOf,
  formField,
  listPage,
  refusedFieldByPrefix,
  renderAdminPage,
  showingRefusals,
} from "./context.js";

type AddonForm = { name: string; redirectUris: string; isPublic: boolean };

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
export async function addonPages(app: FastifyInstance) {
  app.get("/:org/addons", async (request, reply) => addonList(request, reply));
  app.get("/:org/apps", async (request, reply) =>
    reply.redirect(`/admin/${adminContextOf(request).organization.slug}/addons`, 301),
  );

  app.post("/:org/addons", async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const form: AddonForm = {
      name: formField(request, "name"),
      redirectUris: formField(request, "redirect_uris"),
      isPublic: formField(request, "public") === "yes",
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
}
