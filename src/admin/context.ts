import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../core/errors.js";
import { type AuditContext, memberAudit } from "../modules/audit/service.js";
import type { AdminOrganization, WebUser } from "../sessions/members.js";
import { type PageData, renderPage } from "../sessions/pages.js";

/** Who is using the admin area, and for which organisation (one they administer). */
export type AdminContext = {
  user: WebUser;
  organization: AdminOrganization;
  organizations: AdminOrganization[];
};

declare module "fastify" {
  interface FastifyRequest {
    adminContext: AdminContext | null;
  }
}

/**
 * The sections of the admin area; tokens, addons, connections and webhooks are "Integrations",
 * and "Activity" is the audit log.
 */
export type AdminSection =
  | "overview"
  | "integrations"
  | "tokens"
  | "addons"
  | "connections"
  | "webhooks"
  | "activity";

export function adminContextOf(request: FastifyRequest): AdminContext {
  if (request.adminContext === null) throw new Error("admin route reached without its context");
  return request.adminContext;
}

/** The admin acting, from their request's client address, for the audit log. */
export function auditContextOf(request: FastifyRequest): AuditContext {
  return memberAudit(adminContextOf(request).user, request.ip);
}

/** `2026-03-01 09:30 UTC`: one unambiguous format for every time the admin pages show. */
function formatTime(value: Date | string | null): string {
  if (value === null) return "";
  const iso = (typeof value === "string" ? new Date(value) : value).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** `2026-03-01 09:30:12 UTC`: to the second, for attempts a few seconds apart. */
function formatInstant(value: Date | string | null): string {
  if (value === null) return "";
  const iso = (typeof value === "string" ? new Date(value) : value).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** Renders an admin page with the organisation's navigation. */
export function renderAdminPage(
  request: FastifyRequest,
  reply: FastifyReply,
  section: AdminSection,
  template: string,
  data: PageData,
  status = 200,
) {
  const context = adminContextOf(request);
  return renderPage(
    request,
    reply,
    template,
    {
      ...data,
      section,
      organization: context.organization,
      organizations: context.organizations,
      base: `/admin/${context.organization.slug}`,
      formatTime,
      formatInstant,
    },
    status,
  );
}

/**
 * The form field a refusal concerns, read from the field name the services put first in their
 * messages ("url: must use https"); null when it concerns the whole form.
 */
export type RefusedField = (message: string) => string | null;

/** A field-named refusal by its prefix: `{ url: "url" }` maps "url: …" to the `url` field. */
export function refusedFieldByPrefix(prefixes: Record<string, string>): RefusedField {
  return (message) => {
    for (const [prefix, field] of Object.entries(prefixes)) {
      if (message.startsWith(prefix)) return field;
    }
    return null;
  };
}

/** Renders a section's list page with its form; the list is read afresh for every render. */
export type ListPage<F> = (
  request: FastifyRequest,
  reply: FastifyReply,
  form?: F,
  error?: string | FieldRefusal | null,
) => Promise<FastifyReply>;

/** A refusal the page itself found, already tied to its field. */
export type FieldRefusal = { field: string; message: string };

/**
 * A section's list page: what `load` reads, and the form that adds to the list, shown again
 * with the refusal (400) beside the field it concerns when a submission was refused.
 */
export function listPage<F>(
  section: AdminSection,
  title: string,
  emptyForm: F,
  load: (request: FastifyRequest, organizationId: string) => Promise<Record<string, unknown>>,
  refusedField: RefusedField = () => null,
): ListPage<F> {
  return async (request, reply, form = emptyForm, error = null) => {
    const data = await load(request, adminContextOf(request).organization.id);
    const message = typeof error === "string" ? error : (error?.message ?? null);
    const errorField =
      error === null ? null : typeof error === "string" ? refusedField(error) : error.field;
    const page = { title, ...data, form, error: message, errorField };
    return renderAdminPage(request, reply, section, `admin/${section}`, page, error ? 400 : 200);
  };
}

/** Runs a form's action; a refusal of the input is shown on the list page beside the form. */
export async function showingRefusals<F>(
  request: FastifyRequest,
  reply: FastifyReply,
  listPageOf: ListPage<F>,
  form: F,
  action: () => Promise<FastifyReply>,
): Promise<FastifyReply> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof ApiError && error.statusCode === 400) {
      return listPageOf(request, reply, form, error.message);
    }
    throw error;
  }
}

/** Where a section's list lives, for the redirect after a change. */
export function sectionPath(
  request: FastifyRequest,
  section: Exclude<AdminSection, "overview" | "integrations" | "activity">,
) {
  return `/admin/${adminContextOf(request).organization.slug}/${section}`;
}
