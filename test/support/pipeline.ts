import { randomBytes } from "node:crypto";
import { type Logger, pino } from "pino";
import type { Db } from "../../src/db/client.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createBullmqQueue } from "../../src/queue/bullmq-queue.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import type { JobQueue } from "../../src/queue/queue.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { startWorker } from "../../src/worker.js";
import { api } from "./api.js";
import { createTestApp, type TestApp } from "./app.js";
import { TEST_REDIS_URL } from "./env.js";
import {
  importFixture,
  mintToken,
  project,
  type Workspace,
  workspaceDocument,
} from "./fixtures.js";
import type { Receiver } from "./receiver.js";

export type Pipeline = TestApp & { queue: JobQueue<WorkspaceJobs>; queuePrefix: string };

/**
 * The app with a real BullMQ queue (its own Redis prefix), or the embedded mode's in-process
 * queue, and a real worker consuming it, as `npm start` runs them; quick retries are off unless
 * `env` sets them. The worker and the queue log to `options.logger` when one is given.
 */
export async function startPipeline(
  env: Record<string, string> = {},
  options: { inProcessQueue?: boolean; redisUrl?: string; logger?: Logger } = {},
): Promise<Pipeline> {
  const redisUrl = options.redisUrl ?? TEST_REDIS_URL;
  const queuePrefix = `test-${randomBytes(6).toString("hex")}`;
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
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

/**
 * An organisation with a project `rover` and a webhook on `path` of the receiver subscribed to
 * `task.created`, written straight to the database (an in-process app's, or a fault test's own).
 */
export async function roverWithWebhook(
  db: Db,
  secretKey: string,
  receiver: Receiver,
  slug: string,
  path: string,
) {
  const ws = await importFixture(db, workspaceDocument(slug, { projects: [project("rover")] }));
  const webhook = await createWebhook(
    db,
    systemAudit,
    { secretKey, production: false, maxPerOrganization: 20 },
    { organizationId: ws.organization.id, url: receiver.url(path), events: ["task.created"] },
  );
  return { ws, webhook };
}

/** `roverWithWebhook` on the pipeline's app, and a way to create tasks through its API. */
export async function workspaceWithWebhook(
  p: Pipeline,
  receiver: Receiver,
  slug: string,
  path: string,
) {
  const { ws, webhook } = await roverWithWebhook(p.db, p.config.secretKey, receiver, slug, path);
  const token = await mintToken(p.db, ws);
  const createTask = async (title: string) => {
    const res = await api(p.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title },
    });
    if (res.status !== 200) throw new Error(`task create: ${res.status}`);
    return res.body.data.id as string;
  };
  return { ws, webhook, createTask };
}

/**
 * An organisation whose project `rover` has a published spec `mass`, so that `svc spec publish`
 * records a `spec.published` event for a webhook to deliver.
 */
export function importRoverWithSpec(db: Db, slug: string): Promise<Workspace> {
  return importFixture(
    db,
    workspaceDocument(slug, {
      projects: [
        project("rover", {
          specs: [
            {
              slug: "mass",
              name: "Mass",
              versions: [{ version: "1", status: "published", value: 12 }],
            },
          ],
        }),
      ],
    }),
  );
}
