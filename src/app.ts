import swagger from "@fastify/swagger";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { adminRoutes } from "./admin/routes.js";
import type { Config } from "./config.js";
import { NotFound, ServiceUnavailable } from "./core/errors.js";
import type { Database, Db } from "./db/client.js";
import { registerApiReference } from "./http/api-reference.js";
import { bearerLookup, registerBearerAuth } from "./http/auth.js";
import { registerCors } from "./http/cors.js";
import { failure, registerErrorHandler } from "./http/error-handler.js";
import { readinessCheck, registerHealthRoutes } from "./http/health.js";
import { registerIdempotency } from "./http/idempotency.js";
import { API_PREFIX, openApiOptions } from "./http/openapi.js";
import { registerRateLimit } from "./http/rate-limit.js";
import { ReadCache, registerReadCache } from "./http/read-cache.js";
import { requestIdOf } from "./http/request-id.js";
import { loggableUrl, RequestLog } from "./http/request-log.js";
import { RequestPathRedis } from "./http/request-path-redis.js";
import { registerRequestSpans } from "./http/request-spans.js";
import { deferNotFoundForImpossibleIds } from "./http/unknown-ids.js";
import { type MetricsRecorder, NO_METRICS } from "./metrics/recorder.js";
import { changeEventsAsMarkdown } from "./modules/change-events/catalogue.js";
import { moduleRoutes } from "./modules/routes.js";
import { PrincipalCache } from "./modules/tokens/principal-cache.js";
import { authorizeRoutes } from "./oauth/authorize-routes.js";
import { oauthMetadataRoutes } from "./oauth/metadata-routes.js";
import { PublicClientOrigins } from "./oauth/public-client-origins.js";
import { oauthTokenRoutes, TOKEN_ENDPOINT_PATH } from "./oauth/token-routes.js";
import { withEnqueueDeadline } from "./queue/enqueue-deadline.js";
import type { WorkspaceJobs } from "./queue/jobs.js";
import type { JobQueue } from "./queue/queue.js";
import { MarkdownPool } from "./richtext/markdown-pool.js";
import { registerBrowserPlumbing } from "./sessions/browser-scope.js";
import { signInRoutes } from "./sessions/sign-in-routes.js";
import type { Tracer } from "./tracing/tracer.js";
import { webhookRoutes } from "./webhooks/routes.js";

const MAX_PATH_PARAM_LENGTH = 2048;

export type AppDependencies = {
  config: Config;
  database: Database;
  logger: Logger;
  /** Where requests hand work to the worker (webhook pings, redeliveries). */
  queue: JobQueue<WorkspaceJobs>;
  /** Shared rate-limit budget across instances; absent in embedded mode. */
  redis?: Redis;
  /** Puts each request in a span (tracing on). */
  tracer?: Tracer;
  /** What requests count (durations, refusals, replays); nothing without METRICS_PORT. */
  metrics?: MetricsRecorder;
  /** Whether the process is stopping: /readyz then answers 503 so load balancers move away. */
  draining?: () => boolean;
};

declare module "fastify" {
  interface FastifyInstance {
    db: Db;
    /** The in-process principals of live tokens; whatever revokes here forgets at once. */
    principals: PrincipalCache;
    queue: JobQueue<WorkspaceJobs>;
    config: Config;
    /** Worker threads converting markdown bodies; the app closes them when it closes. */
    markdown: MarkdownPool;
    metrics: MetricsRecorder;
  }
}

async function registerApi(
  app: FastifyInstance,
  deps: AppDependencies,
  redis: RequestPathRedis | undefined,
  publicClientOrigins: PublicClientOrigins,
  readCache: ReadCache | undefined,
): Promise<void> {
  // Only the pages of public clients run the OAuth flow in the browser.
  const tokenEndpoint = `${API_PREFIX}${TOKEN_ENDPOINT_PATH}`;
  await registerCors(app, (path) =>
    path === tokenEndpoint ? publicClientOrigins.allows : "any-origin",
  );
  registerErrorHandler(app, deps.config.bodyLimitBytes);
  deferNotFoundForImpossibleIds(app);
  // Bodies are JSON (spec, "Endpoints"); anything else is refused as a wrong Content-Type.
  app.removeContentTypeParser("text/plain");
  const lookup = bearerLookup((token) => app.principals.authenticate(token));
  await registerRateLimit(app, deps.config, redis, lookup);
  registerBearerAuth(app, lookup);
  registerIdempotency(app);
  app.setNotFoundHandler({ preHandler: app.rateLimit() }, async () => {
    throw new NotFound("No such endpoint");
  });
  app.get("/openapi.json", { config: { access: "public" }, schema: { hide: true } }, async () =>
    app.swagger(),
  );
  // Absolute addresses (under PUBLIC_URL's own path), so the page works at /docs as at /docs/.
  const apiBase = `${new URL(deps.config.publicUrl).pathname.replace(/\/$/, "")}${API_PREFIX}`;
  registerApiReference(app, apiBase);
  // The kept answers are of the workspace's reads only: the webhook routes read tables that
  // notify nobody.
  await app.register(async (workspace) => {
    if (readCache !== undefined) registerReadCache(workspace, readCache);
    for (const routes of moduleRoutes) await workspace.register(routes);
  });
  await app.register(webhookRoutes);
  await app.register(oauthTokenRoutes, { config: deps.config });
}

/** Sign-in, OAuth consent and the admin area: one scope with sessions, CSRF and templates. */
async function registerBrowserPages(app: FastifyInstance, deps: AppDependencies): Promise<void> {
  await registerBrowserPlumbing(app, deps.config);
  await app.register(signInRoutes, { config: deps.config });
  await app.register(authorizeRoutes, { config: deps.config });
  await app.register(adminRoutes, { config: deps.config, prefix: "/admin" });
}

/** The route label of a request no route matched: never its URL, which anyone may invent. */
const UNMATCHED_ROUTE = "unmatched";

/** Every answer's duration by route pattern, refusals (auth, validation, rate limit) included. */
function measureRequests(app: FastifyInstance, metrics: MetricsRecorder): void {
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

const MALFORMED_URL = "The request URL is malformed";

// Outside any scope there are no templates or helmet, so these pages and their headers are
// written out here: static, with nothing to escape and nothing to load.
function sendStaticPage(reply: FastifyReply, status: number, title: string, message: string) {
  return reply
    .code(status)
    .type("text/html; charset=utf-8")
    .header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
    .header("X-Content-Type-Options", "nosniff")
    .header("X-Frame-Options", "DENY")
    .send(
      `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>\n<body><main><h1>${title}</h1><p>${message}</p></main></body></html>\n`,
    );
}

/** A path that cannot even be decoded: the API's envelope under /api/v1, a page elsewhere. */
function answerUnroutableRequest(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  request.log.info({ err: error, url: loggableUrl(request.url) }, "request refused before routing");
  reply.header("X-Request-Id", request.id);
  if (request.url.startsWith(API_PREFIX)) {
    reply.code(400).send(failure("invalid_request", MALFORMED_URL));
    return;
  }
  sendStaticPage(reply, 400, "Bad request", `${MALFORMED_URL}.`);
}

/**
 * An unknown path outside the API: a page, where Fastify's default would echo the URL (and any
 * secret in its query) into the body and the log.
 */
function answerUnknownPage(_request: FastifyRequest, reply: FastifyReply) {
  return sendStaticPage(reply, 404, "Not found", "There is no page at this address.");
}

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance,
    bodyLimit: deps.config.bodyLimitBytes,
    genReqId: requestIdOf,
    logController: new RequestLog(loggerInstance),
    frameworkErrors: answerUnroutableRequest,
    // The reference is served at /api/v1/docs itself, not only behind a redirect to /docs/.
    rewriteUrl: (request) =>
      request.url === `${API_PREFIX}/docs` ? `${API_PREFIX}/docs/` : (request.url ?? "/"),
    trustProxy: deps.config.trustProxy,
    return503OnClosing: false,
    // A client that sends its request slowly, or holds a silent connection open, is cut off
    // instead of holding a socket and its memory.
    requestTimeout: deps.config.http.requestTimeoutMs,
    connectionTimeout: deps.config.http.connectionTimeoutMs,
    // Node enforces the request timeout only when the headers' timeout is no longer, and
    // checks it every 30 s by default, which would let a slow client keep its socket that long.
    http: {
      headersTimeout: deps.config.http.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(deps.config.http.requestTimeoutMs / 2)),
    },
    // Fastify's default (100) answers a longer slug with 400 before authentication; a slug or
    // id of any length is looked up and, when unknown, is the usual 404.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
  });
  registerRequestSpans(app, deps.tracer);
  app.decorate("db", deps.database.db);
  const principals = new PrincipalCache(deps.database.db, deps.logger);
  await principals.start(deps.database);
  app.addHook("onClose", () => principals.stop());
  app.decorate("principals", principals);
  app.decorate("queue", withEnqueueDeadline(deps.queue, deps.config.queueCommandTimeoutMs));
  app.decorate("config", deps.config);
  const metrics = deps.metrics ?? NO_METRICS;
  app.decorate("metrics", metrics);
  if (metrics.enabled) measureRequests(app, metrics);
  const markdown = new MarkdownPool(deps.config.richText, deps.logger);
  app.addHook("onClose", () => markdown.close());
  app.decorate("markdown", markdown);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // A request that arrives on an open connection while the process stops gets the usual 503 of
  // its face (the envelope, the OAuth format, a page), not Fastify's own body.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onRequest", async (request, reply) => {
    reply.header("X-Request-Id", request.id);
    if (closing) {
      reply.header("Connection", "close");
      throw new ServiceUnavailable("The service is restarting", true);
    }
  });

  await app.register(swagger, openApiOptions(deps.config, changeEventsAsMarkdown()));

  app.setNotFoundHandler(answerUnknownPage);
  // The rate limit and readiness share it: a command left unanswered holds back both.
  const redis = deps.redis === undefined ? undefined : new RequestPathRedis(deps.redis);
  const readiness = readinessCheck(deps.database, redis, deps.config.readinessTimeoutMs);
  const draining = deps.draining ?? (() => false);
  registerHealthRoutes(app, async () =>
    draining() ? { ready: false, body: { status: "draining", checks: {} } } : readiness(),
  );
  const publicClientOrigins = new PublicClientOrigins(deps.database.db, deps.config.corsOrigins);
  const readCache =
    deps.config.readCache.maxCharacters > 0 ? new ReadCache(deps.config.readCache) : undefined;
  if (readCache !== undefined) {
    await readCache.start(deps.database);
    app.addHook("onClose", () => readCache.stop());
  }
  await app.register((api) => registerApi(api, deps, redis, publicClientOrigins, readCache), {
    prefix: API_PREFIX,
  });
  await app.register(oauthMetadataRoutes, {
    config: deps.config,
    publicClientOrigins,
    prefix: "/.well-known",
  });
  await app.register((browser) => registerBrowserPages(browser, deps));
  return app;
}
