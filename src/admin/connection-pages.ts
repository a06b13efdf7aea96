import type { FastifyInstance } from "fastify";
import { scopeDescriptions } from "../core/scopes.js";
import { findLiveConnection, listGrantsConnectedTo, revokeGrant } from "../oauth/grants.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import { adminContextOf, pathId, renderAdminPage, sectionPath } from "./context.js";

/** Connected addons: the grants other developers' addons hold on this organisation. */
export async function connectionPages(app: FastifyInstance) {
  app.get("/:org/connections", async (request, reply) => {
    const { organization } = adminContextOf(request);
    const grants = await listGrantsConnectedTo(app.db, organization.id);
    return renderAdminPage(request, reply, "connections", "admin/connections", {
      title: "Connected addons",
      grants,
      scopeDescriptions,
    });
  });

  // The confirmation is a page of its own, so it works without JavaScript (the CSP has none).
  app.get("/:org/connections/:id/revoke", async (request, reply) => {
    const { organization } = adminContextOf(request);
    const grant = await findLiveConnection(app.db, organization.id, pathId(request));
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

  app.post("/:org/connections/:id/revoke", async (request, reply) => {
    const { organization } = adminContextOf(request);
    const revoked = await revokeGrant(app.db, pathId(request), organization.id);
    app.principals.forgetOrganization(organization.id);
    leaveNotice(
      request,
      revoked
        ? "Addon disconnected: every token it was issued is revoked."
        : "That addon was already disconnected.",
    );
    return reply.redirect(sectionPath(request, "connections"), 303);
  });
}
