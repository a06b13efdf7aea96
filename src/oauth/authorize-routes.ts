import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { scopeDescriptions } from "../core/scopes.js";
import { memberAudit } from "../modules/audit/service.js";
import { answerWithErrorPage, isCsrfFailure } from "../sessions/browser-scope.js";
import { adminOrganizationsOf, currentUser, redirectToSignIn } from "../sessions/members.js";
import { renderPage } from "../sessions/pages.js";
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
 * The way back is a page of ours that navigates on, never a redirect: browsers hold a form's
 * whole redirect chain (the sign-in form's too) to its page's CSP `form-action`, which would
 * block the addon, or wherever the addon's callback redirects next.
 */
export async function authorizeRoutes(app: FastifyInstance, options: { config: Config }) {
  const { config } = options;

  /**
   * RFC 6749 §4.1.2 with RFC 9207's `iss`, delivered by a page that navigates with a GET
   * (RFC 9700 §4.11) through a meta refresh and a link.
   */
  function backToClient(
    request: FastifyRequest,
    reply: FastifyReply,
    redirectUri: string,
    params: Record<string, string | null>,
  ) {
    return renderPage(request, reply, "oauth/return-to-addon", {
      title: "Returning to the addon",
      refreshTo: clientRedirectUrl(redirectUri, { ...params, iss: config.publicUrl }),
      returnsTo: new URL(redirectUri).origin,
      approved: params.code !== undefined,
    });
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
    await backToClient(request, reply, check.redirectUri, {
      error: check.error,
      error_description: check.description,
      state: check.state,
    });
    return null;
  }

  /** What the consent and needs-admin pages show, and whom their form speaks for. */
  function describeRequest(authorization: AuthorizationRequest, memberId: string) {
    return {
      memberId,
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
    memberId: string,
  ) {
    return renderPage(
      request,
      reply,
      "oauth/needs-admin",
      { title: "An admin must approve this addon", ...describeRequest(authorization, memberId) },
      403,
    );
  }

  app.get(AUTHORIZE_PATH, async (request, reply) => {
    const authorization = await validRequest(request, reply, request.query);
    if (authorization === null) return reply;
    const user = await currentUser(app.db, request);
    if (user === null) return redirectToSignIn(reply, request.url);
    const organizations = await adminOrganizationsOf(app.db, user.id);
    if (organizations.length === 0) return renderNeedsAdmin(request, reply, authorization, user.id);
    return renderPage(request, reply, "oauth/consent", {
      title: `Connect ${authorization.addon.name}`,
      ...describeRequest(authorization, user.id),
      organizations,
    });
  });

  function reviewAgainPath(authorization: AuthorizationRequest): string {
    return `${AUTHORIZE_PATH}?${new URLSearchParams(authorizationParameters(authorization)).toString()}`;
  }

  /** A consent form that no longer speaks for whoever is signed in now decides nothing. */
  function renderStaleForm(
    request: FastifyRequest,
    reply: FastifyReply,
    authorization: AuthorizationRequest,
  ) {
    return renderPage(
      request,
      reply,
      "oauth/stale-form",
      {
        title: "This page has expired",
        addon: authorization.addon.name,
        reviewAgain: reviewAgainPath(authorization),
      },
      403,
    );
  }

  /**
   * A consent form from an old session (its CSRF cookie gone) fails its CSRF check: the member
   * may review the same request again rather than start over from the addon.
   */
  async function answerStaleForm(
    error: FastifyError,
    request: FastifyRequest,
    reply: FastifyReply,
  ) {
    if (!isCsrfFailure(error)) return answerWithErrorPage(error, request, reply);
    // Without a request to review again, it is any other form refused for its CSRF token.
    const check = await checkAuthorizationRequest(app.db, request.body);
    if (check.outcome !== "valid") return answerWithErrorPage(error, request, reply);
    return renderStaleForm(request, reply, check.request);
  }

  app.post(AUTHORIZE_PATH, { errorHandler: answerStaleForm }, async (request, reply) => {
    const authorization = await validRequest(request, reply, request.body);
    if (authorization === null) return reply;
    const user = await currentUser(app.db, request);
    if (user === null) return redirectToSignIn(reply, reviewAgainPath(authorization));
    const form = request.body as Record<string, unknown>;
    if (form.decision === "deny") {
      return backToClient(request, reply, authorization.redirectUri, {
        error: "access_denied",
        error_description: "The member declined to connect the addon",
        state: authorization.state,
      });
    }
    // Shown to another member (someone else signed in since, in another tab): deciding would
    // approve in the name of whoever is signed in now, who never saw this page.
    if (form.member_id !== user.id) return renderStaleForm(request, reply, authorization);
    if (form.decision !== "approve") {
      return renderInvalidRequest(
        request,
        reply,
        "The form did not say whether to approve or deny.",
      );
    }
    const organizations = await adminOrganizationsOf(app.db, user.id);
    const organization = organizations.find((candidate) => candidate.id === form.organization_id);
    if (organization === undefined) return renderNeedsAdmin(request, reply, authorization, user.id);
    const { code } = await approveAuthorization(app.db, memberAudit(user, request.ip), {
      clientRecordId: authorization.addon.id,
      organizationId: organization.id,
      userId: user.id,
      redirectUri: authorization.redirectUri,
      scopes: authorization.scopes,
      codeChallenge: authorization.codeChallenge,
      codeTtlSeconds: config.oauthCodeTtlSeconds,
    });
    return backToClient(request, reply, authorization.redirectUri, {
      code,
      state: authorization.state,
    });
  });
}
