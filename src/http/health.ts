import type { FastifyInstance } from "fastify";
import type { Database } from "../db/client.js";
import { MISSED, withinDeadline } from "../queue/deadline.js";
import type { RequestPathRedis } from "./request-path-redis.js";

type CheckStatus = "ok" | "unavailable";

/** What /readyz answers: its status code and body. */
export type Readiness = {
  ready: boolean;
  body: { status: "ok" | "unavailable" | "draining"; checks: Record<string, CheckStatus> };
};

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
 * Whether the process's dependencies answer: the checks run side by side, each within
 * READINESS_TIMEOUT_MS, so readiness is known in time whatever they do.
 */
export function readinessCheck(
  database: Pick<Database, "ping">,
  redis: RequestPathRedis | undefined,
  readinessTimeoutMs: number,
): () => Promise<Readiness> {
  return async () => {
    const [databaseStatus, redisStatus] = await Promise.all([
      check(readinessTimeoutMs, () => database.ping()),
      redis === undefined
        ? undefined
        : check(readinessTimeoutMs, () => redis.run(readinessTimeoutMs, (client) => client.ping())),
    ]);
    const checks: Record<string, CheckStatus> = { database: databaseStatus };
    if (redisStatus !== undefined) checks.redis = redisStatus;
    const ready = Object.values(checks).every((status) => status === "ok");
    return { ready, body: { status: ready ? "ok" : "unavailable", checks } };
  };
}

/** Liveness and readiness at the service root, for orchestrators. */
export function registerHealthRoutes(app: FastifyInstance, readiness: () => Promise<Readiness>) {
  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (_request, reply) => {
    const { ready, body } = await readiness();
    return reply.code(ready ? 200 : 503).send(body);
  });
}
