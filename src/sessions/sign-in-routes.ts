import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { users } from "../db/schema/index.js";
import { AuthFailureLimiter, failureKeys } from "../modules/auth-failures/limiter.js";
import { hashPassword, verifyPassword } from "../modules/users/passwords.js";
import { sessionCookieName } from "./browser-scope.js";
import { currentUser, markSeen, safeReturnPath } from "./members.js";
import { renderPage } from "./pages.js";

const DEFAULT_LANDING = "/admin";

type SignInForm = { email: string; password: string; returnTo: string | null };

function field(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === "string" ? value : "";
}

function readSignInForm(body: unknown): SignInForm {
  return {
    email: field(body, "email").trim(),
    password: field(body, "password"),
    returnTo: safeReturnPath(field(body, "return_to")),
  };
}

/**
 * A hash of a random password, verified against when the email is unknown, so an unknown
 * account costs the same time as a wrong password and does not reveal itself.
 */
let decoyHash: Promise<string> | undefined;
function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(24).toString("base64url"));
  return decoyHash;
}

async function passwordMatches(hash: string | null, password: string): Promise<boolean> {
  try {
    if (hash === null) {
      await verifyPassword(await decoyPasswordHash(), password);
      return false;
    }
    return await verifyPassword(hash, password);
  } catch {
    // A malformed stored hash is a failed sign-in, not a crash.
    return false;
  }
}

/** The member the form names, when the password is theirs; else null. */
async function findMemberToSignIn(db: Db, form: SignInForm): Promise<{ id: string } | null> {
  const [user] =
    form.email === ""
      ? []
      : await db
          .select({ id: users.id, passwordHash: users.passwordHash })
          .from(users)
          .where(sql`lower(${users.email}) = ${form.email.toLowerCase()}`)
          .limit(1);
  const ok = await passwordMatches(user?.passwordHash ?? null, form.password);
  return user !== undefined && ok ? { id: user.id } : null;
}

function minutes(seconds: number): string {
  const value = Math.max(1, Math.ceil(seconds / 60));
  return value === 1 ? "1 minute" : `${value} minutes`;
}

function renderSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  form: { email: string; returnTo: string | null; error?: string },
  status = 200,
) {
  return renderPage(
    request,
    reply,
    "login",
    { title: "Sign in", email: form.email, returnTo: form.returnTo, error: form.error ?? null },
    status,
  );
}

/** `GET /login`, `POST /login` and `POST /logout`: members sign in with email and password. */
export async function signInRoutes(app: FastifyInstance, options: { config: Config }) {
  const { config } = options;
  const limiter = new AuthFailureLimiter(app.db, config.authRateLimitMax);

  app.get("/login", async (request, reply) => {
    const returnTo = safeReturnPath((request.query as Record<string, unknown>).return_to);
    if ((await currentUser(app.db, request)) !== null) {
      return reply.redirect(returnTo ?? DEFAULT_LANDING, 303);
    }
    return renderSignIn(request, reply, { email: "", returnTo });
  });

  app.post("/login", async (request, reply) => {
    const form = readSignInForm(request.body);
    const keys = [
      failureKeys.signInAddress(request.ip),
      failureKeys.signInAddressAndAccount(request.ip, form.email),
    ];
    const attempt = await limiter.guard(
      keys,
      async () => {
        const user = await findMemberToSignIn(app.db, form);
        return { failed: user === null, value: user };
      },
      failureKeys.signInAccount(form.email),
    );
    if (attempt.limited) {
      reply.header("Retry-After", String(attempt.retryAfterSeconds));
      return renderSignIn(
        request,
        reply,
        {
          ...form,
          error: `Too many failed sign-ins from this address. Try again in ${minutes(attempt.retryAfterSeconds)}.`,
        },
        429,
      );
    }
    const user = attempt.value;
    if (user === null) {
      return renderSignIn(
        request,
        reply,
        { ...form, error: "The email or password is incorrect." },
        401,
      );
    }
    // A new session id on sign-in: an id planted before sign-in is worth nothing after it.
    await request.session.regenerate();
    request.session.userId = user.id;
    markSeen(request);
    return reply.redirect(form.returnTo ?? DEFAULT_LANDING, 303);
  });

  app.post("/logout", async (request, reply) => {
    await request.session.destroy();
    reply.clearCookie(sessionCookieName(config), { path: "/" });
    return reply.redirect("/login", 303);
  });
}
