import { randomBytes } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { clientAddress } from "../core/client-address.js";
import type { Db } from "../db/client.js";
import { users } from "../db/schema/index.js";
import { recordSignInAudit } from "../modules/audit/service.js";
import {
  type AttemptOutcome,
  AuthFailureLimiter,
  failureKeys,
} from "../modules/auth-failures/limiter.js";
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
 * A hash of a random password, made on first use and verified against when the email is
 * unknown, so an unknown account costs the same time as a wrong password.
 */
function decoyPasswordHash(): () => Promise<string> {
  let hash: Promise<string> | undefined;
  return () => {
    hash ??= hashPassword(randomBytes(24).toString("base64url"));
    return hash;
  };
}

async function passwordMatches(
  decoyHash: () => Promise<string>,
  hash: string | null,
  password: string,
): Promise<boolean> {
  try {
    if (hash === null) {
      await verifyPassword(await decoyHash(), password);
      return false;
    }
    return await verifyPassword(hash, password);
  } catch {
    // A malformed stored hash is a failed sign-in, not a crash.
    return false;
  }
}

type Account = { id: string; passwordHash: string | null; lastSignInAddress: string | null };

async function findAccount(db: Db, email: string): Promise<Account | null> {
  if (email === "") return null;
  const [account] = await db
    .select({
      id: users.id,
      passwordHash: users.passwordHash,
      lastSignInAddress: users.lastSignInAddress,
    })
    .from(users)
    .where(sql`lower(${users.email}) = ${email.toLowerCase()}`)
    .limit(1);
  return account ?? null;
}

/** What a sign-in came to: the member, a wrong guess, or refused by the account's caps. */
type Verdict =
  | { kind: "member"; id: string }
  | { kind: "wrong" }
  | { kind: "capped"; retryAfterSeconds: number };

// A cookie may live 400 days at most (RFC 6265bis §4.1.2.2).
const KNOWN_DEVICE_MAX_AGE_SECONDS = 400 * 24 * 60 * 60;

/** The signed cookie a browser gets on sign-in: the member it signed in, known again later. */
function knownDeviceCookieName(config: Config): string {
  return config.httpsOnly ? "__Host-svc_device" : "svc_device";
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

function renderTooMany(
  request: FastifyRequest,
  reply: FastifyReply,
  form: SignInForm,
  what: string,
  refusal: { retryAfterSeconds: number },
) {
  reply.header("Retry-After", String(refusal.retryAfterSeconds));
  const error = `Too many ${what}. Try again in ${minutes(refusal.retryAfterSeconds)}.`;
  return renderSignIn(request, reply, { ...form, error }, 429);
}

/** `GET /login`, `POST /login` and `POST /logout`: members sign in with email and password. */
export async function signInRoutes(app: FastifyInstance, options: { config: Config }) {
  const { config } = options;
  const limiter = new AuthFailureLimiter(app.db, config.authRateLimitMax);
  const decoyHash = decoyPasswordHash();

  app.get("/login", async (request, reply) => {
    const returnTo = safeReturnPath((request.query as Record<string, unknown>).return_to);
    if ((await currentUser(app.db, request)) !== null) {
      return reply.redirect(returnTo ?? DEFAULT_LANDING, 303);
    }
    return renderSignIn(request, reply, { email: "", returnTo });
  });

  app.post("/login", async (request, reply) => {
    const form = readSignInForm(request.body);
    const address = clientAddress(request.ip);
    const account = await findAccount(app.db, form.email);
    const deviceCookie = request.cookies[knownDeviceCookieName(config)];
    const device = deviceCookie === undefined ? null : request.unsignCookie(deviceCookie);
    // The member's own address or browser keeps its way in, whatever strangers elsewhere try.
    const known =
      account !== null &&
      (account.lastSignInAddress === address ||
        (device?.valid === true && device.value === account.id));
    const checkPassword = async (): Promise<AttemptOutcome<Verdict>> => {
      const ok = await passwordMatches(decoyHash, account?.passwordHash ?? null, form.password);
      return account !== null && ok
        ? { failed: false, value: { kind: "member", id: account.id } }
        : { failed: true, value: { kind: "wrong" } };
    };
    // Refused by the account's caps, nothing was checked: nothing counts against the address.
    const cappedCheck = async (): Promise<AttemptOutcome<Verdict>> => {
      const capped = await limiter.cap(
        failureKeys.signInAttempts(form.email),
        config.signInAccountCaps,
        checkPassword,
      );
      return capped.limited
        ? { failed: false, value: { kind: "capped", retryAfterSeconds: capped.retryAfterSeconds } }
        : capped.value;
    };
    const attempt = await limiter.guard(
      [
        failureKeys.signInAddress(request.ip),
        failureKeys.signInAddressAndAccount(request.ip, form.email),
      ],
      known ? checkPassword : cappedCheck,
      known ? undefined : failureKeys.signInAccount(form.email),
    );
    if (attempt.limited) {
      app.metrics.countRateLimitRejection("auth_failures");
      return renderTooMany(request, reply, form, "failed sign-ins from this address", attempt);
    }
    const verdict = attempt.value;
    if (verdict.kind === "capped") {
      app.metrics.countRateLimitRejection("auth_failures");
      return renderTooMany(request, reply, form, "sign-in attempts on this account", verdict);
    }
    if (verdict.kind !== "member") {
      app.metrics.countAuthFailure("sign_in");
      await recordSignInAudit(app.db, { email: form.email, succeeded: false, address: request.ip });
      return renderSignIn(
        request,
        reply,
        { ...form, error: "The email or password is incorrect." },
        401,
      );
    }
    await app.db.transaction(async (tx) => {
      await tx.update(users).set({ lastSignInAddress: address }).where(eq(users.id, verdict.id));
      await recordSignInAudit(tx, { email: form.email, succeeded: true, address: request.ip });
    });
    reply.setCookie(knownDeviceCookieName(config), verdict.id, {
      signed: true,
      httpOnly: true,
      sameSite: "lax",
      secure: config.httpsOnly,
      path: "/",
      maxAge: KNOWN_DEVICE_MAX_AGE_SECONDS,
    });
    // A new session id on sign-in: an id planted before sign-in is worth nothing after it.
    await request.session.regenerate();
    request.session.userId = verdict.id;
    markSeen(request);
    return reply.redirect(form.returnTo ?? DEFAULT_LANDING, 303);
  });

  app.post("/logout", async (request, reply) => {
    await request.session.destroy();
    reply.clearCookie(sessionCookieName(config), { path: "/" });
    return reply.redirect("/login", 303);
  });
}
