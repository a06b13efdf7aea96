import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { scopeDescriptions } from "../core/scopes.js";
import { findLiveConnection, listGrantsConnectedTo, revokeGrant } from "../oauth/grants.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import { adminContextOf, auditContextOf, renderAdminPage, sectionPath } from "./context.js";
import { organizationParams, recordParams } from "./form-schemas.js";

/** Connected addons: the grants other developers' addons hold on this organisation. */
export const connectionPages: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/:org/connections",
    { schema: { params: organizationParams } },
    async (request, reply) => {
      const { organization } = adminContextOf(request);
      const grants = await listGrantsConnectedTo(app.db, organization.id);
      return renderAdminPage(request, reply, "connections", "admin/connections", {
        title: "Connected addons",
        grants,
        scopeDescriptions,
      });
    },
  );

  // The confirmation is a page of its own, so it works without JavaScript (the CSP has none).
  const revokeSchema = { params: recordParams };
  app.get("/:org/connections/:id/revoke", { schema: revokeSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const grant = await findLiveConnection(app.db, organization.id, request.params.id);
    if (grant === null) {
      throw new PageError(
        404,
        "Not found",
        "There is no such connected addon, or it is already disconnected.",
      );
    }
    return renderAdminPage(request, reply, "connections", "admin/connection-revoke", {
      title: `Disconnect ${grant.addonName}?`,
      grant,
      scopeDescriptions,
    });
  });

  app.post("/:org/connections/:id/revoke", { schema: revokeSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const revoked = await revokeGrant(
      app.db,
      auditContextOf(request),
      request.params.id,
      organization.id,
    );
    app.principals.forgetOrganization(organization.id);
    leaveNotice(
      request,
      revoked
        ? "Addon disconnected: every token it was issued is revoked."
        : "That addon was already disconnected.",
    );
    return reply.redirect(sectionPath(request, "connections"), 303);
  });
};
