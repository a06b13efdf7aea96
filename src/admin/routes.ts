import type { FastifyInstance } from "fastify";
import type { Config } from "../config.js";
import { adminOrganizationsOf, currentUser, redirectToSignIn } from "../sessions/members.js";
import { PageError, renderPage } from "../sessions/pages.js";
import { activityPages } from "./activity-pages.js";
import { addonPages } from "./addon-pages.js";
import { connectionPages } from "./connection-pages.js";
import { renderAdminPage } from "./context.js";
import { tokenPages } from "./token-pages.js";
import { webhookPages } from "./webhook-pages.js";

function notAnAdmin(): PageError {
  return new PageError(
    403,
    "Admins only",
    "Only an admin of this organisation can use its admin area. Ask an admin if you need a token or an addon connected.",
  );
}

/**
 * The admin area at `/admin`, for org admins: everything under `/admin/:org` acts on that one
 * organisation, and only for a member who administers it now.
 */
export async function adminRoutes(app: FastifyInstance, options: { config: Config }) {
  app.decorateRequest("adminContext", null);

  // Before the routes' schemas: who may ask comes first, whatever the form or address holds.
  app.addHook("preValidation", async (request, reply) => {
    const user = await currentUser(app.db, request);
    if (user === null) {
      // A HEAD answers with the GET's headers (RFC 9110 §9.3.2), its redirect included; a
      // form post cannot be replayed after sign-in, so it comes back to the admin area.
      const page = request.method === "GET" || request.method === "HEAD";
      return redirectToSignIn(reply, page ? request.url : "/admin");
    }
    const slug = (request.params as { org?: unknown } | undefined)?.org;
    if (typeof slug !== "string") return;
    const organizations = await adminOrganizationsOf(app.db, user.id);
    const organization = organizations.find((candidate) => candidate.slug === slug);
    // A member, a non-member and an unknown slug all get the same answer.
    if (organization === undefined) throw notAnAdmin();
    request.adminContext = { user, organization, organizations };
  });

  app.setNotFoundHandler(async (request, reply) =>
    renderPage(
      request,
      reply,
      "error",
      { title: "Not found", message: "There is nothing at this address." },
      404,
    ),
  );

  app.get("/", async (request, reply) => {
    const user = await currentUser(app.db, request);
    if (user === null) return redirectToSignIn(reply, request.url);
    const organizations = await adminOrganizationsOf(app.db, user.id);
    if (organizations.length === 0) throw notAnAdmin();
    const [only] = organizations;
    if (organizations.length === 1 && only !== undefined) {
      return reply.redirect(`/admin/${only.slug}`, 303);
    }
    return renderPage(request, reply, "admin/choose-organization", {
      title: "Choose an organisation",
      organizations,
    });
  });

  app.get("/:org", async (request, reply) =>
    renderAdminPage(request, reply, "overview", "admin/overview", { title: "Admin" }),
  );
  // The spec's name for where tokens are minted; each part keeps its own address.
  app.get("/:org/integrations", async (request, reply) =>
    renderAdminPage(request, reply, "integrations", "admin/integrations", {
      title: "Integrations",
    }),
  );

  await app.register(tokenPages);
  await app.register(addonPages);
  await app.register(connectionPages);
  await app.register(webhookPages, { config: options.config });
  await app.register(activityPages);
}
