import { createRequire } from "node:module";
import rateLimit, { type FastifyRateLimitStore } from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Redis } from "ioredis";
import type { Config } from "../config.js";
import { RateLimited } from "../core/errors.js";
import type { BearerLookup } from "./auth.js";

/**
 * The budget belongs to a live token; a request without one (no token, or one that is
 * malformed, unknown, revoked or expired) spends its address's budget, so inventing tokens
 * buys no extra requests.
 */
function rateLimitKey(lookup: BearerLookup) {
  return async (request: FastifyRequest): Promise<string> => {
    const principal = await lookup(request);
    return principal === null ? `ip:${request.ip}` : `token:${principal.tokenId}`;
  };
}

type StoreConstructor = new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  ...backing: unknown[]
) => FastifyRateLimitStore;

// The plugin's own stores, which it does not export by name: one budget in Redis shared by
// every instance, and one in this process's memory.
const require = createRequire(import.meta.url);
const RedisStore: StoreConstructor = require("@fastify/rate-limit/store/RedisStore");
const LocalStore: StoreConstructor = require("@fastify/rate-limit/store/LocalStore");

const REDIS_NAMESPACE = "svc-rate-limit:";

/**
 * The instances' shared budget in Redis; while Redis cannot answer, each process counts the same
 * budget in its own memory, so an outage neither takes the API down nor lifts the limit.
 */
class SharedBudgetWithLocalFallback implements FastifyRateLimitStore {
  constructor(
    private readonly shared: FastifyRateLimitStore,
    private readonly local: FastifyRateLimitStore,
  ) {}

  static over(redis: Redis) {
    // A fixed window: neither continueExceeding nor exponentialBackoff is configured.
    return class extends SharedBudgetWithLocalFallback {
      constructor() {
        super(new RedisStore(false, false, redis, REDIS_NAMESPACE), new LocalStore(false, false));
      }
    };
  }

  incr(...[key, callback, timeWindow, max]: Parameters<FastifyRateLimitStore["incr"]>): void {
    this.shared.incr(
      key,
      (error, result) =>
        error === null ? callback(null, result) : this.local.incr(key, callback, timeWindow, max),
      timeWindow,
      max,
    );
  }

  child(routeOptions: Parameters<FastifyRateLimitStore["child"]>[0]): FastifyRateLimitStore {
    return new SharedBudgetWithLocalFallback(
      this.shared.child(routeOptions),
      this.local.child(routeOptions),
    );
  }
}

/**
 * Per-token rate limit on every /api/v1 response. With Redis the instances share one budget,
 * and fall back to one budget per process while Redis is away.
 * It runs before authentication so that even refused requests carry the RateLimit headers.
 */
export async function registerRateLimit(
  app: FastifyInstance,
  config: Config,
  redis: Redis | undefined,
  lookup: BearerLookup,
): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: config.rateLimit.max,
    timeWindow: config.rateLimit.windowSeconds * 1000,
    keyGenerator: rateLimitKey(lookup),
    enableDraftSpec: true,
    ...(redis === undefined ? {} : { store: SharedBudgetWithLocalFallback.over(redis) }),
    errorResponseBuilder: (_request, context) => new RateLimited(Math.ceil(context.ttl / 1000)),
  });
}
