import { and, asc, eq, isNull } from "drizzle-orm";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Db } from "../db/client.js";
import { memberships, organizations, users } from "../db/schema/index.js";

/** The member signed in to the browser session. */
export type WebUser = { id: string; email: string; name: string };
export type AdminOrganization = { id: string; slug: string; name: string };

declare module "fastify" {
  interface Session {
    userId?: string;
    /** A one-line notice shown on the next page (after a redirect). */
    notice?: string;
  }
  interface FastifyRequest {
    /** Memo of `currentUser`: undefined until looked up. */
    webUser: WebUser | null | undefined;
  }
}

/** The signed-in member, or null; looked up once per request. */
export async function currentUser(db: Db, request: FastifyRequest): Promise<WebUser | null> {
  if (request.webUser !== undefined) return request.webUser;
  const userId = request.session?.userId;
  let user: WebUser | null = null;
  if (typeof userId === "string") {
    const [row] = await db
      .select({ id: users.id, email: users.email, name: users.name })
      .from(users)
      .where(eq(users.id, userId))
      .limit(1);
    user = row ?? null;
  }
  request.webUser = user;
  return user;
}

/** The organisations the user administers now (an active membership with the admin role). */
export async function adminOrganizationsOf(db: Db, userId: string): Promise<AdminOrganization[]> {
  return db
    .select({ id: organizations.id, slug: organizations.slug, name: organizations.name })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
    .where(
      and(
        eq(memberships.userId, userId),
        eq(memberships.role, "admin"),
        isNull(memberships.removedAt),
      ),
    )
    .orderBy(asc(organizations.name), asc(organizations.slug));
}

const PLACEHOLDER_ORIGIN = "http://return.invalid";
// Long enough for any authorization request the authorize endpoint accepts, encoded.
const MAX_RETURN_PATH = 16_384;

function isSiteLocalPath(path: string): boolean {
  return path.startsWith("/") && !path.startsWith("//") && !path.includes("\\");
}

/**
 * Only a path on this site may be a return address after sign-in, so the sign-in page cannot
 * be used to send a member elsewhere (no `//host`, no `/\host`, no scheme).
 */
export function safeReturnPath(value: unknown): string | null {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_RETURN_PATH)
    return null;
  if (!isSiteLocalPath(value)) return null;
  if ([...value].some((character) => character.charCodeAt(0) < 0x20)) return null;
  if (!URL.canParse(value, PLACEHOLDER_ORIGIN)) return null;
  const url = new URL(value, PLACEHOLDER_ORIGIN);
  const path = `${url.pathname}${url.search}`;
  // Checked again after normalising: `/.//evil.example` normalises to `//evil.example`.
  return url.origin === PLACEHOLDER_ORIGIN && isSiteLocalPath(path) ? path : null;
}

/** Sends a signed-out visitor to the sign-in page, to come back to `returnTo` afterwards. */
export function redirectToSignIn(reply: FastifyReply, returnTo: string) {
  const safe = safeReturnPath(returnTo);
  const query = safe === null ? "" : `?${new URLSearchParams({ return_to: safe }).toString()}`;
  return reply.redirect(`/login${query}`, 303);
}
