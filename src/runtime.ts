import path from "node:path";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "./config.js";
import type { Database } from "./db/client.js";
import { openPglite } from "./db/embedded.js";
import { claimEmbeddedDatabase } from "./db/embedded-lock.js";
import { createInProcessQueue } from "./queue/in-process-queue.js";
import type { WorkspaceJobs } from "./queue/jobs.js";
import type { JobQueue } from "./queue/queue.js";
import type { Tracer } from "./tracing/tracer.js";

/** The connections a process holds, opened in the mode the configuration selects. */
export type Runtime = {
  config: Config;
  logger: Logger;
  database: Database;
  redis: Redis | undefined;
  queue: JobQueue<WorkspaceJobs>;
  /** Present when an OTLP endpoint is set: requests, statements, commands and attempts in spans. */
  tracer: Tracer | undefined;
  close(): Promise<void>;
};

export async function openDatabase(
  config: Config,
  logger?: Logger,
  tracer?: Tracer,
): Promise<{ database: Database; release: () => void }> {
  if (config.databaseUrl !== undefined) {
    const onQuery = logger?.isLevelEnabled("trace")
      ? (query: string) => logger.trace({ query }, "sql")
      : undefined;
    const { openPostgres } = await import("./db/postgres.js");
    return {
      database: openPostgres(config.databaseUrl, {
        ...config.postgres,
        sessionUrl: config.databaseListenUrl,
        onQuery,
        tracer,
      }),
      release: () => {},
    };
  }
  const release = claimEmbeddedDatabase(config.dataDir);
  try {
    return { database: await openPglite(path.join(config.dataDir, "pglite")), release };
  } catch (error) {
    release();
    throw error;
  }
}

async function connectRedis(redisUrl: string, tracer: Tracer | undefined): Promise<Redis> {
  const Redis = (await import("./queue/traced-redis.js")).redisClientClass(tracer);
  // Request-path commands (rate limit, readiness) fail fast while Redis is away, and have their
  // deadlines (RequestPathRedis) while it stalls. Those of one event-loop turn share a write.
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    enableAutoPipelining: true,
  });
  redis.on("error", () => {});
  await redis.connect();
  return redis;
}

/** OpenTelemetry is loaded only with an endpoint: with tracing off, not one of its modules is read. */
async function openTracer(config: Config, logger: Logger): Promise<Tracer | undefined> {
  if (config.tracing === undefined) return undefined;
  const { createOtelTracer } = await import("./tracing/otel-tracer.js");
  return createOtelTracer(config.tracing, logger);
}

export async function openRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const tracer = await openTracer(config, logger);
  const { database, release } = await openDatabase(config, logger, tracer);
  if (config.migrateOnStart) await database.migrate();
  const redis =
    config.redisUrl === undefined ? undefined : await connectRedis(config.redisUrl, tracer);
  // BullMQ and ioredis are loaded only with Redis: the embedded default starts without them.
  const queue =
    config.redisUrl === undefined
      ? createInProcessQueue<WorkspaceJobs>(logger)
      : (await import("./queue/bullmq-queue.js")).createBullmqQueue<WorkspaceJobs>({
          redisUrl: config.redisUrl,
          prefix: config.queuePrefix,
          logger,
          lockDurationMs: config.workerLockSeconds * 1000,
          tracer,
        });
  return {
    config,
    logger,
    database,
    redis,
    queue,
    tracer,
    async close() {
      await queue.close();
      redis?.disconnect();
      await database.close();
      release();
      // Last, so the spans of the shutdown itself are sent too.
      await tracer?.close();
    },
  };
}
