import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { pino } from "pino";
import { buildApp } from "../../src/app.js";
import { type Config, loadConfig, type PostgresLimits } from "../../src/config.js";
import type { Database, Db } from "../../src/db/client.js";
import { openPostgres } from "../../src/db/postgres.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import type { JobQueue } from "../../src/queue/queue.js";
import { createTestDatabase, TEST_POOL } from "./database.js";

export const TEST_SECRET_KEY = "test-secret-key-0123456789abcdefghijklmnop";

export type TestApp = {
  app: FastifyInstance;
  db: Db;
  database: Database;
  config: Config;
  close(): Promise<void>;
};

/** The real app over a fresh Postgres database of its own; `env` overrides configuration. */
export async function createTestApp(
  env: Record<string, string> = {},
  options: {
    redis?: Redis;
    queue?: JobQueue<WorkspaceJobs>;
    onQuery?: (query: string) => void;
    /** Bounds of the app's pool other than the suite's own. */
    pool?: Partial<PostgresLimits>;
  } = {},
): Promise<TestApp> {
  const testDatabase = await createTestDatabase({ onQuery: options.onQuery, ...options.pool });
  const config = loadConfig({
    NODE_ENV: "test",
    DATABASE_URL: testDatabase.url,
    SECRET_KEY: TEST_SECRET_KEY,
    PUBLIC_URL: "http://localhost:3000",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    // As in test/faults/service-process.ts: a loaded machine's healthy Redis may take 50 ms.
    REDIS_COMMAND_TIMEOUT_MS: "250",
    ...env,
  });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  // Without a queue of its own, jobs a request hands over wait in memory, unrun.
  const queue = options.queue ?? createInProcessQueue<WorkspaceJobs>(logger);
  const app = await buildApp({
    config,
    database: testDatabase.database,
    logger,
    redis: options.redis,
    queue,
  });
  await app.ready();
  return {
    app,
    db: testDatabase.database.db,
    database: testDatabase.database,
    config,
    async close() {
      await app.close();
      if (options.queue === undefined) await queue.close();
      await testDatabase.drop();
    },
  };
}

/**
 * A second instance of the app on the same database, with its own pool and its own listening
 * connection, as another process of a deployment runs it.
 */
export async function createSiblingApp(t: TestApp): Promise<TestApp> {
  if (t.config.databaseUrl === undefined) throw new Error("a sibling needs PostgreSQL");
  const database = openPostgres(t.config.databaseUrl, { ...TEST_POOL });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const queue = createInProcessQueue<WorkspaceJobs>(logger);
  const app = await buildApp({ config: t.config, database, logger, queue });
  await app.ready();
  return {
    app,
    db: database.db,
    database,
    config: t.config,
    async close() {
      await app.close();
      await queue.close();
      await database.close();
    },
  };
}
