import type { FastifyInstance } from "fastify";
import { scopeDescriptions } from "../core/scopes.js";
import { listGrantsConnectedTo, revokeGrant } from "../oauth/grants.js";
import { leaveNotice } from "../sessions/pages.js";
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
