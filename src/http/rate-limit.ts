import rateLimit from "@fastify/rate-limit";
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

/**
 * Per-token rate limit on every /api/v1 response. With Redis the instances share one budget.
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
    // An unreachable Redis must not take the API down with it.
    skipOnError: true,
    ...(redis === undefined ? {} : { redis, nameSpace: "svc-rate-limit:" }),
    errorResponseBuilder: (_request, context) => new RateLimited(Math.ceil(context.ttl / 1000)),
  });
}
