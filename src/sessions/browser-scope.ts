import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import cookie from "@fastify/cookie";
import csrfProtection from "@fastify/csrf-protection";
import formbody from "@fastify/formbody";
import helmet from "@fastify/helmet";
import rateLimit from "@fastify/rate-limit";
import session from "@fastify/session";
import view from "@fastify/view";
import { Eta } from "eta";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.js";
import { clientAddress } from "../core/client-address.js";
import { ApiError, ServiceUnavailable } from "../core/errors.js";
import { fromDependencyError, schemaRefusalOf } from "../http/error-handler.js";
import { PageError, renderErrorPage, renderUnavailablePage } from "./pages.js";
import { pageDirectives } from "./security-headers.js";
import { DatabaseSessionStore } from "./session-store.js";
import { findViewsFolder } from "./views.js";

/** An absolute lifetime: a session ends this long after sign-in, however busy. */
const SESSION_MAX_AGE_MS = 8 * 60 * 60 * 1000;
const NO_COUNTER_HEADERS = {
  "x-ratelimit-limit": false,
  "x-ratelimit-remaining": false,
  "x-ratelimit-reset": false,
} as const;

/** `__Host-` (RFC 6265bis) pins the cookie to this host and path `/`; it needs Secure. */

export function sessionCookieName(config: Config): string {
  // __Host- cookies must be Secure; the prefix then also pins them to this host and path.
  return config.httpsOnly ? "__Host-svc_session" : "svc_session";
}

/** The signed cookie holding the CSRF secret of the forms shown to this browser. */
function csrfCookieName(config: Config): string {
  return config.httpsOnly ? "__Host-svc_csrf" : "svc_csrf";
}

// SECRET_KEY also encrypts webhook secrets; each cookie signer gets a key of its own derived
// from it, so no use can leak into another.
function cookieSigningKey(secretKey: string, use: string): string {
  return createHmac("sha256", secretKey).update(`workspace-service ${use}`).digest("hex");
}

/** A form refused because its CSRF token is missing or belongs to another secret. */
export function isCsrfFailure(error: FastifyError): boolean {
  return error.code === "FST_CSRF_MISSING_SECRET" || error.code === "FST_CSRF_INVALID_TOKEN";
}

/** The pages' error handler: every refusal as a rendered page with its status. */
export async function answerWithErrorPage(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  if (error instanceof PageError) {
    return renderErrorPage(request, reply, error.statusCode, error.title, error.message);
  }
  const schemaRefusal = schemaRefusalOf(error);
  if (schemaRefusal !== null) {
    // A path id that cannot be one of ours names nothing: the same 404 as an unknown one.
    if (schemaRefusal.part === "params") {
      return renderErrorPage(request, reply, 404, "Not found", "There is nothing at this address.");
    }
    return renderErrorPage(request, reply, 400, "Request not accepted", schemaRefusal.message);
  }
  if (isCsrfFailure(error)) {
    return renderErrorPage(
      request,
      reply,
      403,
      "Form not accepted",
      "This form could not be verified: it is missing its security token or the token has expired. Go back, reload the page and try again.",
    );
  }
  const refused = error instanceof ApiError ? error : fromDependencyError(error);
  if (refused instanceof ServiceUnavailable) {
    request.log.warn({ err: error }, "service unavailable on a page");
    return renderUnavailablePage(reply, refused);
  }
  if (refused !== null && refused.statusCode < 500) {
    return renderErrorPage(
      request,
      reply,
      refused.statusCode,
      "Request not accepted",
      refused.message,
    );
  }
  if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
    request.log.info({ err: error }, "browser request refused");
    return renderErrorPage(
      request,
      reply,
      400,
      "Request not accepted",
      "The request could not be read. Go back and try again.",
    );
  }
  request.log.error({ err: error }, "unhandled error on a page");
  return renderErrorPage(
    request,
    reply,
    500,
    "Something went wrong",
    "The page could not be shown. Try again in a moment.",
  );
}

/**
 * Everything the browser pages share (sessions, CSRF, page budget, headers, templates, an error
 * page), registered in their own scope so the JSON API never sees cookies or form bodies.
 */
export async function registerBrowserPlumbing(app: FastifyInstance, config: Config): Promise<void> {
  app.decorateRequest("webUser", undefined);
  // Pages are not API operations: none of them belongs in the OpenAPI document.
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  await app.register(cookie, { secret: cookieSigningKey(config.secretKey, "browser cookies") });
  await app.register(session, {
    secret: cookieSigningKey(config.secretKey, "session cookie"),
    cookieName: sessionCookieName(config),
    store: new DatabaseSessionStore(app.db, SESSION_MAX_AGE_MS),
    // No row for a visitor until something is worth keeping (a CSRF secret, a sign-in).
    saveUninitialized: false,
    rolling: false,
    cookie: {
      path: "/",
      httpOnly: true,
      sameSite: "lax",
      // Follows PUBLIC_URL's scheme, not NODE_ENV: a service reached over https never sends
      // its session over plain http.
      secure: config.httpsOnly,
      maxAge: SESSION_MAX_AGE_MS,
    },
  });
  // The CSRF secret lives in a signed cookie, not the session: showing a form to a visitor
  // writes no row.
  await app.register(csrfProtection, {
    sessionPlugin: "@fastify/cookie",
    cookieKey: csrfCookieName(config),
    cookieOpts: {
      path: "/",
      httpOnly: true,
      sameSite: "lax",
      secure: config.httpsOnly,
      signed: true,
    },
    // Forms only: the token travels as a hidden field, never in a header a script could set.
    getToken: (request) => {
      const token = (request.body as { _csrf?: unknown } | undefined)?._csrf;
      return typeof token === "string" ? token : undefined;
    },
  });
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: { useDefaults: false, directives: pageDirectives(config.isProduction) },
    frameguard: { action: "deny" },
    referrerPolicy: { policy: "no-referrer" },
    hsts: config.httpsOnly ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  });
  await app.register(rateLimit, {
    global: true,
    max: config.pageRateLimitMax,
    timeWindow: 60_000,
    keyGenerator: (request) => `page:${clientAddress(request.ip)}`,
    onExceeded: () => app.metrics.countRateLimitRejection("pages"),
    // People read pages, not counters: only a refusal says when to come back, and no page's bytes
    // depend on how many came before it (a foreign id's page equals an unknown one's).
    addHeadersOnExceeding: NO_COUNTER_HEADERS,
    addHeaders: { ...NO_COUNTER_HEADERS, "retry-after": true },
    errorResponseBuilder: (_request, context) =>
      new PageError(
        429,
        "Too many requests",
        `Too many pages were asked for from this address. Try again in ${Math.ceil(context.ttl / 1000)} seconds.`,
      ),
  });
  await app.register(formbody);
  const views = findViewsFolder();
  await app.register(view, {
    engine: { eta: new Eta({ autoEscape: true }) },
    root: views,
    production: config.isProduction,
  });

  // Pages show tokens, secrets and member data: no cache may keep them.
  app.addHook("onRequest", async (_request, reply) => {
    reply.header("Cache-Control", "no-store");
  });
  // Every form carries a CSRF token; a POST without a valid one never reaches its handler. It
  // is checked before the route's schemas, which would refuse the form first and drop the token.
  app.addHook("preValidation", (request, reply, done) => {
    if (request.method !== "POST") return done();
    app.csrfProtection(request, reply, done);
  });
  app.setErrorHandler(answerWithErrorPage);

  const stylesheet = readFileSync(path.join(views, "site.css"), "utf8");
  app.get("/assets/site.css", { config: { rateLimit: false } }, async (_request, reply) =>
    reply
      .type("text/css; charset=utf-8")
      .header("Cache-Control", "public, max-age=3600")
      .send(stylesheet),
  );
  // Browsers ask for it on every page whatever the markup says; without it each logs a 404.
  const favicon = readFileSync(path.join(views, "favicon.ico"));
  app.get("/favicon.ico", { config: { rateLimit: false } }, async (_request, reply) =>
    reply.type("image/x-icon").header("Cache-Control", "public, max-age=604800").send(favicon),
  );
}
