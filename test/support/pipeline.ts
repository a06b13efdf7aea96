import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { createBullmqQueue } from "../../src/queue/bullmq-queue.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import type { JobQueue } from "../../src/queue/queue.js";
import { startWorker } from "../../src/worker.js";
import { createTestApp, type TestApp } from "./app.js";
import { TEST_REDIS_URL } from "./env.js";

export type Pipeline = TestApp & { queue: JobQueue<WorkspaceJobs>; queuePrefix: string };

/**
 * The app with a real BullMQ queue (its own Redis prefix), or the embedded mode's in-process
 * queue, and a real worker consuming it, as `npm start` runs them; quick retries are off unless
 * `env` sets them.
 */
export async function startPipeline(
  env: Record<string, string> = {},
  options: { inProcessQueue?: boolean; redisUrl?: string } = {},
): Promise<Pipeline> {
  const redisUrl = options.redisUrl ?? TEST_REDIS_URL;
  const queuePrefix = `test-${randomBytes(6).toString("hex")}`;
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const queue = options.inProcessQueue
    ? createInProcessQueue<WorkspaceJobs>(logger)
    : createBullmqQueue<WorkspaceJobs>({ redisUrl, prefix: queuePrefix, logger });
  const t = await createTestApp(
    {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: queuePrefix,
      WEBHOOK_RELAY_INTERVAL_MS: "100",
      WEBHOOK_QUICK_RETRIES: "",
      RATE_LIMIT_MAX: "100000",
      ...env,
    },
    { queue },
  );
  const stopWorker = await startWorker({ config: t.config, database: t.database, logger, queue });
  return {
    ...t,
    queue,
    queuePrefix,
    async close() {
      await stopWorker();
      await queue.close();
      await t.close();
    },
  };
}
