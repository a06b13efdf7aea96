import rateLimit, { type FastifyRateLimitStore } from "@fastify/rate-limit";
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from "fastify";
import type { Result } from "ioredis";
import type { Config } from "../config.js";
import { clientAddress } from "../core/client-address.js";
import { RateLimited } from "../core/errors.js";
import { type BearerLookup, presentedBearer } from "./auth.js";
import { OverBudgetAddresses } from "./over-budget-addresses.js";
import type { RequestPathRedis } from "./request-path-redis.js";

/**
 * The budget belongs to a live token; a request without one (no token, or one that is
 * malformed, unknown, revoked or expired) spends its address's budget, so inventing tokens
 * buys no extra requests, and once the address is past its budget, not even a lookup.
 */
function rateLimitKey(lookup: BearerLookup, overBudget: OverBudgetAddresses) {
  return async (request: FastifyRequest): Promise<string> => {
    const address = clientAddress(request.ip);
    const token = presentedBearer(request);
    if (overBudget.chargesAddress(address, token)) return `ip:${address}`;
    const principal = await lookup(request);
    if (principal === null) return `ip:${address}`;
    if (token !== null) overBudget.markLive(token);
    return `token:${principal.tokenId}`;
  };
}

// As many budgets as the plugin's own in-memory store keeps; the least recently used goes first.
const LOCAL_BUDGETS = 5000;

type Counted = Parameters<FastifyRateLimitStore["incr"]>[1];

/** Budgets counted in this process's memory, in the fixed window the shared ones use. */
class LocalBudgets {
  private readonly windows = new Map<string, { current: number; startedAt: number }>();

  incr(key: string, counted: Counted, timeWindow: number): void {
    const now = Date.now();
    const running = this.windows.get(key);
    const window =
      running === undefined || running.startedAt + timeWindow <= now
        ? { current: 1, startedAt: now }
        : { current: running.current + 1, startedAt: running.startedAt };
    this.windows.delete(key);
    this.windows.set(key, window);
    if (this.windows.size > LOCAL_BUDGETS) {
      const [oldest] = this.windows.keys();
      if (oldest !== undefined) this.windows.delete(oldest);
    }
    counted(null, { current: window.current, ttl: window.startedAt + timeWindow - now });
  }
}

/**
 * The budgets' keys: per deployment, so two sharing a Redis keep their own budgets. With the
 * default QUEUE_PREFIX (`svc`) they are the keys earlier versions used.
 */
const budgetNamespace = (queuePrefix: string) => `${queuePrefix}-rate-limit:`;

// While Redis stays away the fallback is announced once, not once per request or per flap.
const FALLBACK_WARNING_INTERVAL_MS = 60_000;

/**
 * Counts one budget: a fixed window of `windowMs` that starts with its first request, as the
 * plugin's own Redis store keeps it. Answers the count and the window's time left.
 */
const INCREMENT_BUDGET = `
local current = redis.call('INCR', KEYS[1])
local ttl = tonumber(ARGV[1])
if current == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  ttl = redis.call('PTTL', KEYS[1])
end
return { current, ttl }
`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    incrementBudget(keyCount: 1, key: string, windowMs: number): Result<[number, number], Context>;
  }
}

type SharedBudgetOptions = {
  namespace: string;
  deadlineMs: number;
  logger: FastifyBaseLogger;
};

/**
 * The instances' shared budget in Redis. While Redis cannot answer within the deadline (down or
 * stalled), each process counts the same budget in its own memory, so an outage neither holds
 * nor takes the API down, nor lifts the limit.
 */
class SharedBudgetWithLocalFallback implements FastifyRateLimitStore {
  private countingLocally = false;
  private lastWarningAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly redis: RequestPathRedis,
    private readonly local: LocalBudgets,
    private readonly options: SharedBudgetOptions,
  ) {}

  static over(redis: RequestPathRedis, options: SharedBudgetOptions) {
    redis.defineCommand("incrementBudget", { lua: INCREMENT_BUDGET });
    return class extends SharedBudgetWithLocalFallback {
      constructor() {
        super(redis, new LocalBudgets(), options);
      }
    };
  }

  incr(...[key, counted, timeWindow]: Parameters<FastifyRateLimitStore["incr"]>): void {
    void this.count(key, counted, timeWindow);
  }

  private async count(key: string, counted: Counted, timeWindow: number): Promise<void> {
    let answer: [number, number];
    try {
      answer = await this.redis.run(this.options.deadlineMs, (redis) =>
        redis.incrementBudget(1, `${this.options.namespace}${key}`, timeWindow),
      );
    } catch (error) {
      this.fallBack(error);
      this.local.incr(key, counted, timeWindow);
      return;
    }
    if (this.countingLocally) {
      this.countingLocally = false;
      this.options.logger.info("rate limit: Redis answers again; budgets are shared again");
    }
    const [current, ttl] = answer;
    counted(null, { current, ttl });
  }

  private fallBack(error: unknown): void {
    if (this.countingLocally) return;
    this.countingLocally = true;
    const now = performance.now();
    if (now - this.lastWarningAt < FALLBACK_WARNING_INTERVAL_MS) return;
    this.lastWarningAt = now;
    this.options.logger.warn(
      { err: error },
      "rate limit: Redis cannot answer; each process counts budgets on its own",
    );
  }

  /**
   * The plugin asks for a child store only for a route with a limit of its own, and every route
   * shares the one budget: failing at start beats a route silently counting apart.
   */
  child(): FastifyRateLimitStore {
    throw new Error("Every route shares the one rate-limit budget; none has a limit of its own");
  }
}

/**
 * Per-token rate limit on every /api/v1 response. With Redis the instances share one budget,
 * and fall back to one budget per process while Redis is away or stalled.
 * It runs before authentication so that even refused requests carry the RateLimit headers.
 */
export async function registerRateLimit(
  app: FastifyInstance,
  config: Config,
  redis: RequestPathRedis | undefined,
  lookup: BearerLookup,
): Promise<void> {
  const overBudget = new OverBudgetAddresses(config.rateLimit.windowSeconds * 1000);
  const shared = {
    namespace: budgetNamespace(config.queuePrefix),
    deadlineMs: config.redisCommandTimeoutMs,
    logger: app.log,
  };
  await app.register(rateLimit, {
    global: true,
    max: config.rateLimit.max,
    timeWindow: config.rateLimit.windowSeconds * 1000,
    keyGenerator: rateLimitKey(lookup, overBudget),
    onExceeded: (_request, key) => {
      app.metrics.countRateLimitRejection("api");
      if (key.startsWith("ip:")) overBudget.markSpent(key.slice("ip:".length));
    },
    enableDraftSpec: true,
    ...(redis === undefined ? {} : { store: SharedBudgetWithLocalFallback.over(redis, shared) }),
    errorResponseBuilder: (_request, context) => new RateLimited(Math.ceil(context.ttl / 1000)),
  });
}
