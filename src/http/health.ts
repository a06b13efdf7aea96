import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import type { Database } from "../db/client.js";

async function check(probe: () => Promise<unknown>): Promise<"ok" | "unavailable"> {
  try {
    await probe();
    return "ok";
  } catch {
    return "unavailable";
  }
}

/** Liveness and readiness at the service root, for orchestrators. */
export function registerHealthRoutes(
  app: FastifyInstance,
  database: Database,
  redis: Redis | undefined,
): void {
  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (_request, reply) => {
    const checks: Record<string, string> = { database: await check(() => database.ping()) };
    if (redis !== undefined) checks.redis = await check(() => redis.ping());
    const ready = Object.values(checks).every((status) => status === "ok");
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ok" : "unavailable", checks });
  });
}
