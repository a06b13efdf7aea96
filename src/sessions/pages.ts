import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceUnavailable } from "../core/errors.js";
import { currentUser } from "./members.js";

/** A refusal the browser pages answer with a rendered page of this status. */
export class PageError extends Error {
  constructor(
    readonly statusCode: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
    this.name = "PageError";
  }
}

export type PageData = { title: string } & Record<string, unknown>;

/** Takes the one-time notice a redirect left in the session. */
function takeNotice(request: FastifyRequest): string | null {
  const notice = request.session?.notice;
  if (typeof notice !== "string") return null;
  request.session.notice = undefined;
  return notice;
}

async function send(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: PageData,
  status: number,
) {
  const html = await reply.viewAsync(template, {
    ...data,
    user: request.webUser ?? null,
    csrfToken: reply.generateCsrf(),
    notice: takeNotice(request),
  });
  return reply.code(status).type("text/html; charset=utf-8").send(html);
}

/** Renders a page through its Eta template inside the layout (signed-in member, CSRF token). */
export async function renderPage(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: PageData,
  status = 200,
) {
  await currentUser(request.server.db, request);
  return send(request, reply, template, data, status);
}

/** The error page; it never queries anything, so it renders even when the database is away. */
export function renderErrorPage(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  title: string,
  message: string,
) {
  return send(request, reply, "error", { title, message }, status);
}

/**
 * The page for a database that cannot serve: it leaves the session alone, since taking a notice
 * would need the very database that is away.
 */
export async function renderUnavailablePage(reply: FastifyReply, unavailable: ServiceUnavailable) {
  const html = await reply.viewAsync("error", {
    title: "Service unavailable",
    message: `${unavailable.message}.`,
    user: null,
    csrfToken: null,
    notice: null,
  });
  return reply
    .code(503)
    .header("Retry-After", String(unavailable.retryAfterSeconds))
    .type("text/html; charset=utf-8")
    .send(html);
}

/** Leaves a one-line notice for the page the next redirect shows. */
export function leaveNotice(request: FastifyRequest, notice: string): void {
  request.session.notice = notice;
}
