import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { allScopes, isScope, type Scope, scopeDescriptions } from "../core/scopes.js";
import { tokenNameSchema } from "../modules/tokens/schemas.js";
import { createToken, revokeToken } from "../modules/tokens/service.js";
import { leaveNotice, PageError } from "../sessions/pages.js";
import {
  adminContextOf,
  auditContextOf,
  type FieldRefusal,
  listPage,
  renderAdminPage,
  sectionPath,
} from "./context.js";
import { checkboxList, formText, organizationParams, recordParams } from "./form-schemas.js";
import { findOrganizationToken, listOrganizationTokens } from "./tokens.js";

/** The expiries the mint form offers, in days; empty means the token does not expire. */
const EXPIRY_DAYS = ["", "1", "7", "30", "90", "365"] as const;

const scopeChoices = allScopes.map((scope) => ({ scope, description: scopeDescriptions[scope] }));

type MintForm = { name: string; scopes: string[]; expiresInDays: string };

// The shape only: the scopes, expiry and name length are checked with the form's own messages.
const mintFormBody = z.object({
  name: formText,
  scopes: checkboxList,
  expires_in_days: formText,
});

const tokenList = listPage<MintForm>(
  "tokens",
  "API tokens",
  { name: "", scopes: [], expiresInDays: "" },
  async (request, organizationId) => ({
    tokens: await listOrganizationTokens(request.server.db, organizationId),
    scopeChoices,
    expiryDays: EXPIRY_DAYS,
    now: new Date(),
  }),
);

function checkMintForm(form: MintForm): FieldRefusal | null {
  const name = tokenNameSchema.safeParse(form.name);
  if (!name.success)
    return { field: "name", message: `The name ${name.error.issues[0]?.message}.` };
  if (form.scopes.length === 0) return { field: "scopes", message: "Choose at least one scope." };
  const unknown = form.scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0)
    return { field: "scopes", message: `Unknown scope: ${unknown.join(", ")}.` };
  if (!(EXPIRY_DAYS as readonly string[]).includes(form.expiresInDays))
    return { field: "expires_in_days", message: "Choose an expiry from the list." };
  return null;
}

/**
 * Tokens: every token of the organisation with scopes, creator, last use and the addon that was
 * issued it, if one was; mint (shown once); revoke after a confirmation page.
 */
export const tokenPages: FastifyPluginAsyncZod = async (app) => {
  app.get("/:org/tokens", { schema: { params: organizationParams } }, async (request, reply) =>
    tokenList(request, reply),
  );

  const mintSchema = { params: organizationParams, body: mintFormBody };
  app.post("/:org/tokens", { schema: mintSchema }, async (request, reply) => {
    const { organization, user } = adminContextOf(request);
    const form: MintForm = {
      name: request.body.name.trim(),
      scopes: request.body.scopes,
      expiresInDays: request.body.expires_in_days,
    };
    const error = checkMintForm(form);
    if (error !== null) return tokenList(request, reply, form, error);
    const days = form.expiresInDays === "" ? null : Number(form.expiresInDays);
    const created = await createToken(app.db, auditContextOf(request), {
      organizationId: organization.id,
      userId: user.id,
      scopes: allScopes.filter((scope): scope is Scope => form.scopes.includes(scope)),
      expiresAt: days === null ? null : new Date(Date.now() + days * 86_400_000),
      name: form.name === "" ? null : form.name,
    });
    return renderAdminPage(request, reply, "tokens", "admin/token-created", {
      title: "Token created",
      token: created.token,
      scopes: created.scopes,
      expiresAt: created.expiresAt,
      name: form.name,
    });
  });

  // The confirmation step is a page of its own, so it works without JavaScript (the CSP has none).
  const revokeSchema = { params: recordParams };
  app.get("/:org/tokens/:id/revoke", { schema: revokeSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const token = await findOrganizationToken(app.db, organization.id, request.params.id);
    if (token === null) throw new PageError(404, "Not found", "There is no such token.");
    return renderAdminPage(request, reply, "tokens", "admin/token-revoke", {
      title: "Revoke this token?",
      token,
    });
  });

  app.post("/:org/tokens/:id/revoke", { schema: revokeSchema }, async (request, reply) => {
    const { organization } = adminContextOf(request);
    const revoked = await revokeToken(app.db, auditContextOf(request), {
      tokenId: request.params.id,
      organizationId: organization.id,
      handMintedOnly: true,
    });
    app.principals.forgetOrganization(organization.id);
    leaveNotice(request, revoked ? "Token revoked." : "That token was already revoked.");
    return reply.redirect(sectionPath(request, "tokens"), 303);
  });
};
