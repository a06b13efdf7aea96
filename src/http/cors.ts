import cors, { type FastifyCorsOptions } from "@fastify/cors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** Whether a browser page of this origin may read the answer. */
type OriginCheck = (origin: string) => Promise<boolean>;

/** Which origins a path answers: any origin, or those the check accepts. */
export type OriginPolicy = (path: string) => "any-origin" | OriginCheck;

// Browsers cap the preflight cache (Chromium at two hours), so a longer age buys nothing.
const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/**
 * Bearer tokens travel in Authorization, never in cookies, so no request is sent with
 * credentials and none is allowed: a page can call the API only with a token it holds.
 */
const SHARED_OPTIONS = {
  methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
  allowedHeaders: ["Authorization", "Content-Type", "Idempotency-Key"],
  exposedHeaders: [
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Retry-After",
    "X-Request-Id",
  ],
  credentials: false,
  maxAge: PREFLIGHT_MAX_AGE_SECONDS,
} satisfies FastifyCorsOptions;

const isPreflight = (request: FastifyRequest) =>
  request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined;

/**
 * The matched route's pattern, so no other spelling of a path (percent-encoded, say) escapes its
 * policy. A preflight matches the plugin's wildcard route and is judged by its path; its answer
 * alone lets the browser read nothing.
 */
function pathOf(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  if (pattern !== undefined && !pattern.endsWith("*")) return pattern;
  return request.url.split("?", 1)[0] ?? "";
}

async function allowedOrigin(
  request: FastifyRequest,
  policy: OriginPolicy,
): Promise<string | false> {
  const origins = policy(pathOf(request));
  if (origins === "any-origin") return "*";
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  return (await origins(origin)) ? origin : false;
}

/**
 * Answers preflights in the first onRequest hook of the scope, before the rate limit and the
 * access checks (a preflight carries no token). An OPTIONS request that is no preflight, or a
 * preflight from an origin the path refuses, falls through to the scope's not-found answer.
 */
export async function registerCors(app: FastifyInstance, policy: OriginPolicy): Promise<void> {
  // Built once: most paths answer any origin, and need neither a promise nor a new object.
  const anyOrigin = { ...SHARED_OPTIONS, origin: "*", preflight: false };
  const anyOriginPreflight = { ...anyOrigin, preflight: true };
  await app.register(cors, {
    delegator: (
      request: FastifyRequest,
      answer: (error: Error | null, options: FastifyCorsOptions) => void,
    ) => {
      if (policy(pathOf(request)) === "any-origin") {
        answer(null, isPreflight(request) ? anyOriginPreflight : anyOrigin);
        return;
      }
      allowedOrigin(request, policy).then(
        (origin) =>
          answer(null, {
            ...SHARED_OPTIONS,
            origin,
            preflight: origin !== false && isPreflight(request),
          }),
        (error: Error) => answer(error, {}),
      );
    },
  });
  // An answer given before the scope's hooks ran (the 503 of a stopping process comes from the
  // app's first hook) gets the same headers here, so the page can read why it was refused.
  const addLateHeaders = async (request: FastifyRequest, reply: FastifyReply) => {
    const origin = await allowedOrigin(request, policy);
    if (origin === false) return;
    reply.header("Access-Control-Allow-Origin", origin);
    reply.header("Access-Control-Expose-Headers", SHARED_OPTIONS.exposedHeaders.join(", "));
    const vary = reply.getHeader("vary");
    if (origin !== "*") reply.header("Vary", vary === undefined ? "Origin" : `${vary}, Origin`);
  };
  // Most answers went through the hook above: they pass here without a promise.
  app.addHook("onSend", (request, reply, payload, done) => {
    if (reply.hasHeader("access-control-allow-origin") || isPreflight(request)) {
      return done(null, payload);
    }
    addLateHeaders(request, reply).then(() => done(null, payload), done);
  });
}
