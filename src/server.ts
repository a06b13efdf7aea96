import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.js";
import type { MetricsRecorder } from "./metrics/recorder.js";
import type { Runtime } from "./runtime.js";

export async function startApi(
  runtime: Runtime,
  metrics?: MetricsRecorder,
  draining?: () => boolean,
): Promise<FastifyInstance> {
  const app = await buildApp({
    config: runtime.config,
    database: runtime.database,
    logger: runtime.logger,
    redis: runtime.redis,
    queue: runtime.queue,
    tracer: runtime.tracer,
    metrics,
    draining,
  });
  await app.listen({ port: runtime.config.port, host: runtime.config.host });
  return app;
}
