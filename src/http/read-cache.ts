import type {
  FastifyInstance,
  FastifyRequest,
  onSendHookHandler,
  preHandlerHookHandler,
} from "fastify";
import { ForgettingCache } from "../db/notifications.js";
import type { RouteAccess } from "./auth.js";
import { withHookAfter } from "./route-hooks.js";

/** The channel the migrations' triggers notify when an organisation's workspace data changes. */
const WORKSPACE_CHANGED = "workspace_changed";

export type ReadCacheLimits = {
  /** Characters of kept answers at most, over all organisations; 0 keeps none. */
  maxCharacters: number;
  /** An answer is kept at most this long even when nothing says it changed. */
  maxAgeMs: number;
};

type Kept = { payload: string; keptAt: number };

/**
 * The answers of workspace reads, by organisation and URL, so a repeated read costs no query.
 * Triggers notify `workspace_changed` for every write to what the reads return, whichever process
 * or tool writes; this process's own API writes forget before they answer; and while the channel
 * is not heard nothing is served or kept (docs/architecture.md, "Read cache").
 */
export class ReadCache extends ForgettingCache {
  private readonly organizations = new Map<string, Map<string, Kept>>();
  private characters = 0;

  constructor(private readonly limits: ReadCacheLimits) {
    super(WORKSPACE_CHANGED);
  }

  /** The kept answer of a URL, unless it is older than the limit or the channel is unheard. */
  lookup(organizationId: string, url: string, now: number): string | undefined {
    if (!this.heard) return undefined;
    const kept = this.organizations.get(organizationId)?.get(url);
    if (kept === undefined || now - kept.keptAt >= this.limits.maxAgeMs) return undefined;
    return kept.payload;
  }

  /** Taken before a read's query: `keep` refuses its answer if anything changed since. */
  get changesNow(): number {
    return this.changes;
  }

  /** Keeps an answer read after `changesBefore`, unless anything changed since. */
  keep(organizationId: string, url: string, payload: string, changesBefore: number): void {
    if (!this.heard || this.changes !== changesBefore) return;
    if (payload.length > this.limits.maxCharacters) return;
    let answers = this.organizations.get(organizationId);
    if (answers === undefined) {
      answers = new Map();
      this.organizations.set(organizationId, answers);
    }
    this.characters -= answers.get(url)?.payload.length ?? 0;
    answers.set(url, { payload, keptAt: Date.now() });
    this.characters += payload.length;
    this.evictOldest();
  }

  protected dropOrganization(organizationId: string): void {
    const answers = this.organizations.get(organizationId);
    if (answers === undefined) return;
    for (const kept of answers.values()) this.characters -= kept.payload.length;
    this.organizations.delete(organizationId);
  }

  protected dropAll(): void {
    this.organizations.clear();
    this.characters = 0;
  }

  /** Over the limit, the organisation kept longest loses its oldest answers first. */
  private evictOldest(): void {
    for (const [organizationId, answers] of this.organizations) {
      for (const [url, kept] of answers) {
        if (this.characters <= this.limits.maxCharacters) return;
        answers.delete(url);
        this.characters -= kept.payload.length;
      }
      if (answers.size === 0) this.organizations.delete(organizationId);
    }
  }
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Serves the API's scoped reads from the cache after authentication, the scope check and
 * validation, and keeps their 200 answers; every scoped write forgets its organisation's answers
 * before it answers, so the writer reads its own write at once. `/me` is per token, not kept.
 */
export function registerReadCache(app: FastifyInstance, cache: ReadCache): void {
  const readStarted = new WeakMap<FastifyRequest, number>();
  const serveKept: preHandlerHookHandler = (request, reply, done) => {
    const organizationId = request.principal?.organization.id;
    if (organizationId === undefined) return done();
    const kept = cache.lookup(organizationId, request.url, Date.now());
    if (kept === undefined) {
      request.server.metrics.countReadCacheAnswer("miss");
      readStarted.set(request, cache.changesNow);
      return done();
    }
    request.server.metrics.countReadCacheAnswer("hit");
    reply.type("application/json; charset=utf-8").send(kept);
  };
  const keepAnswer: onSendHookHandler = (request, reply, payload, done) => {
    const changesBefore = readStarted.get(request);
    const organizationId = request.principal?.organization.id;
    if (
      changesBefore !== undefined &&
      organizationId !== undefined &&
      reply.statusCode === 200 &&
      typeof payload === "string"
    ) {
      cache.keep(organizationId, request.url, payload, changesBefore);
    }
    done(null, payload);
  };
  const forgetWritten: onSendHookHandler = (request, _reply, payload, done) => {
    const organizationId = request.principal?.organization.id;
    if (organizationId !== undefined) cache.forgetOrganization(organizationId);
    done(null, payload);
  };
  app.addHook("onRoute", (route) => {
    const access = route.config?.access as RouteAccess | undefined;
    if (access === undefined || access === "public" || access === "any-token") return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.includes("GET")) {
      route.preHandler = withHookAfter(route.preHandler, serveKept);
      route.onSend = withHookAfter(route.onSend, keepAnswer);
    } else if (methods.some((method) => WRITES.has(method))) {
      route.onSend = withHookAfter(route.onSend, forgetWritten);
    }
  });
}
