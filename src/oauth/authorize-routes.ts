import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { scopeDescriptions } from "../core/scopes.js";
import { adminOrganizationsOf, currentUser, redirectToSignIn } from "../sessions/members.js";
import { renderPage } from "../sessions/pages.js";
import { allowFormRedirectTo } from "../sessions/security-headers.js";
import {
  type AuthorizationRequest,
  authorizationParameters,
  checkAuthorizationRequest,
  clientRedirectUrl,
} from "./authorization-request.js";
import { approveAuthorization } from "./grants.js";

const AUTHORIZE_PATH = "/oauth/authorize";

/**
 * `GET /oauth/authorize` shows the consent page (every time: no silent re-approval);
 * `POST /oauth/authorize` records the admin's decision and sends the member back to the addon.
 */
export async function authorizeRoutes(app: FastifyInstance, options: { config: Config }) {
  const { config } = options;

  /** RFC 6749 §4.1.2 with RFC 9207's `iss`; 303 so the browser follows with a GET (RFC 9700 §4.11). */
  function backToClient(
    reply: FastifyReply,
    redirectUri: string,
    params: Record<string, string | null>,
  ) {
    return reply.redirect(
      clientRedirectUrl(redirectUri, { ...params, iss: config.publicUrl }),
      303,
    );
  }

  function renderInvalidRequest(request: FastifyRequest, reply: FastifyReply, message: string) {
    return renderPage(
      request,
      reply,
      "oauth/invalid-request",
      { title: "This connection request cannot be used", message },
      400,
    );
  }

  /** Checks the request; answers the refusal itself and returns null when it is not valid. */
  async function validRequest(
    request: FastifyRequest,
    reply: FastifyReply,
    parameters: unknown,
  ): Promise<AuthorizationRequest | null> {
    const check = await checkAuthorizationRequest(app.db, parameters);
    if (check.outcome === "valid") return check.request;
    if (check.outcome === "show-error") {
      await renderInvalidRequest(request, reply, check.message);
      return null;
    }
    // Sent back to the addon only for a signed-in member: before that, any registered redirect
    // URI would serve anyone as an open redirector (RFC 9700 §4.11.2).
    if ((await currentUser(app.db, request)) === null) {
      await redirectToSignIn(reply, request.method === "GET" ? request.url : AUTHORIZE_PATH);
      return null;
    }
    await backToClient(reply, check.redirectUri, {
      error: check.error,
      error_description: check.description,
      state: check.state,
    });
    return null;
  }

  function describeRequest(authorization: AuthorizationRequest) {
    return {
      addon: authorization.addon.name,
      developer: authorization.addon.developer.name,
      returnsTo: new URL(authorization.redirectUri).origin,
      scopes: authorization.scopes.map((scope) => ({
        scope,
        description: scopeDescriptions[scope],
      })),
      parameters: authorizationParameters(authorization),
    };
  }

  /** A member who administers no organisation here can only send the member back. */
  function renderNeedsAdmin(
    request: FastifyRequest,
    reply: FastifyReply,
    authorization: AuthorizationRequest,
  ) {
    // The page's form ends in a redirect to the addon, which form-action must allow.
    allowFormRedirectTo(reply, authorization.redirectUri, config.isProduction);
    return renderPage(
      request,
      reply,
      "oauth/needs-admin",
      { title: "An admin must approve this addon", ...describeRequest(authorization) },
      403,
    );
  }

  app.get(AUTHORIZE_PATH, async (request, reply) => {
    const authorization = await validRequest(request, reply, request.query);
    if (authorization === null) return reply;
    const user = await currentUser(app.db, request);
    if (user === null) return redirectToSignIn(reply, request.url);
    const organizations = await adminOrganizationsOf(app.db, user.id);
    if (organizations.length === 0) return renderNeedsAdmin(request, reply, authorization);
    allowFormRedirectTo(reply, authorization.redirectUri, config.isProduction);
    return renderPage(request, reply, "oauth/consent", {
      title: `Connect ${authorization.addon.name}`,
      ...describeRequest(authorization),
      organizations,
    });
  });

  app.post(AUTHORIZE_PATH, async (request, reply) => {
    const authorization = await validRequest(request, reply, request.body);
    if (authorization === null) return reply;
    const back = `${AUTHORIZE_PATH}?${new URLSearchParams(authorizationParameters(authorization)).toString()}`;
    const user = await currentUser(app.db, request);
    if (user === null) return redirectToSignIn(reply, back);
    const form = request.body as Record<string, unknown>;
    if (form.decision === "deny") {
      return backToClient(reply, authorization.redirectUri, {
        error: "access_denied",
        error_description: "The member declined to connect the addon",
        state: authorization.state,
      });
    }
    if (form.decision !== "approve") {
      return renderInvalidRequest(
        request,
        reply,
        "The form did not say whether to approve or deny.",
      );
    }
    const organizations = await adminOrganizationsOf(app.db, user.id);
    const organization = organizations.find((candidate) => candidate.id === form.organization_id);
    if (organization === undefined) return renderNeedsAdmin(request, reply, authorization);
    const { code } = await approveAuthorization(app.db, {
      clientRecordId: authorization.addon.id,
      organizationId: organization.id,
      userId: user.id,
      redirectUri: authorization.redirectUri,
      scopes: authorization.scopes,
      codeChallenge: authorization.codeChallenge,
      codeTtlSeconds: config.oauthCodeTtlSeconds,
    });
    return backToClient(reply, authorization.redirectUri, { code, state: authorization.state });
  });
}
