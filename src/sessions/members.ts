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
    /** When the signed-in member was last seen (ms), for the idle timeout. */
    lastSeenAt?: number;
    /** A one-line notice shown on the next page (after a redirect). */
    notice?: string;
  }
  interface FastifyRequest {
    /** Memo of `currentUser`: undefined until looked up. */
    webUser: WebUser | null | undefined;
  }
}

// The session row is written again only when the last sighting is older than this, so a busy
// member does not cost a write per page.
const SEEN_RESOLUTION_MS = 60_000;

/** Marks the session's member as seen now. */
export function markSeen(request: FastifyRequest): void {
  request.session.lastSeenAt = Date.now();
}

/**
 * The session's member, unless the session sat idle past SESSION_IDLE_TIMEOUT_MINUTES: then
 * it is signed out.
 */
function activeUserIdOf(request: FastifyRequest): string | undefined {
  const session = request.session;
  if (typeof session?.userId !== "string") return undefined;
  const now = Date.now();
  const lastSeenAt = session.lastSeenAt ?? 0;
  if (now - lastSeenAt > request.server.config.sessionIdleTimeoutMs) {
    session.userId = undefined;
    session.lastSeenAt = undefined;
    return undefined;
  }
  if (now - lastSeenAt > SEEN_RESOLUTION_MS) session.lastSeenAt = now;
  return session.userId;
}

/** The signed-in member, or null; looked up once per request. */
export async function currentUser(db: Db, request: FastifyRequest): Promise<WebUser | null> {
  if (request.webUser !== undefined) return request.webUser;
  const userId = activeUserIdOf(request);
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
