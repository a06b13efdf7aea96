import type { FastifyInstance } from "fastify";
import type { Database } from "../db/client.js";
import { MISSED, withinDeadline } from "../queue/deadline.js";
import type { RequestPathRedis } from "./request-path-redis.js";

type CheckStatus = "ok" | "unavailable";

/** A probe that fails or does not answer within the deadline reports its dependency unavailable. */
async function check(deadlineMs: number, probe: () => Promise<unknown>): Promise<CheckStatus> {
  const answered = probe().then(
    (): CheckStatus => "ok",
    (): CheckStatus => "unavailable",
  );
  const outcome = await withinDeadline(answered, deadlineMs);
  return outcome === MISSED ? "unavailable" : outcome;
}

/**
 * Liveness and readiness at the service root, for orchestrators. The readiness checks run side
 * by side, each within READINESS_TIMEOUT_MS, so /readyz answers in time whatever they do.
 */
export function registerHealthRoutes(
  app: FastifyInstance,
  database: Database,
  redis: RequestPathRedis | undefined,
  readinessTimeoutMs: number,
): void {
  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (_request, reply) => {
    const [databaseStatus, redisStatus] = await Promise.all([
      check(readinessTimeoutMs, () => database.ping()),
      redis === undefined
        ? undefined
        : check(readinessTimeoutMs, () => redis.run(readinessTimeoutMs, (client) => client.ping())),
    ]);
    const checks: Record<string, CheckStatus> = { database: databaseStatus };
    if (redisStatus !== undefined) checks.redis = redisStatus;
    const ready = Object.values(checks).every((status) => status === "ok");
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ok" : "unavailable", checks });
  });
}
