import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createBullmqQueue } from "../../src/queue/bullmq-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { startWorker } from "../../src/worker.js";
import { api } from "../support/api.js";
import { createTestApp, TEST_SECRET_KEY, type TestApp } from "../support/app.js";
import { ROOT, svcCommand } from "../support/cli.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";
import { Receiver } from "../support/receiver.js";

const logger = pino({ level: "silent" });
let receiver: Receiver;

beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(() => receiver.stop());

type Setup = {
  t: TestApp;
  ws: Workspace;
  token: string;
  queuePrefix: string;
  env: Record<string, string>;
};

/** An API with a BullMQ queue and no worker of its own: workers are started by each test. */
async function setup(
  slug: string,
  hookPath: string,
  extraEnv: Record<string, string> = {},
): Promise<Setup> {
  const queuePrefix = `test-${randomBytes(6).toString("hex")}`;
  const env = {
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_QUICK_RETRIES: "",
    // A killed worker's jobs are taken over after 4 s rather than 30 s; an attempt takes 3 s at most.
    WORKER_LOCK_SECONDS: "4",
    WEBHOOK_DELIVERY_TIMEOUT_MS: "3000",
    RATE_LIMIT_MAX: "100000",
    ...extraEnv,
  };
  const queue = createBullmqQueue<WorkspaceJobs>({
    redisUrl: TEST_REDIS_URL,
    prefix: queuePrefix,
    logger,
  });
  const t = await createTestApp(env, { queue });
  const ws = await importFixture(
    t.db,
    workspaceDocument(slug, {
      projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
    }),
  );
  await createWebhook(
    t.db,
    systemAudit,
    { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 },
    { organizationId: ws.organization.id, url: receiver.url(hookPath), events: ["task.created"] },
  );
  const close = t.close;
  t.close = async () => {
    await close();
    await queue.close();
  };
  return { t, ws, token: await mintToken(t.db, ws), queuePrefix, env };
}

async function createTasks(s: Setup, count: number) {
  for (let i = 0; i < count; i += 1) {
    const res = await api(s.t.app, "POST", "/api/v1/projects/rover/tasks", {
      token: s.token,
      body: { title: `Task ${i}` },
    });
    expect(res.status).toBe(200);
  }
}

function spawnWorker(s: Setup): ChildProcess {
  return spawn(process.execPath, [...svcCommand(), "worker"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: s.t.config.databaseUrl,
      SECRET_KEY: TEST_SECRET_KEY,
      LOG_LEVEL: "warn",
      MIGRATE_ON_START: "false",
      ...s.env,
    },
    stdio: "ignore",
  });
}

async function allDelivered(s: Setup, count: number) {
  return eventually(async () => {
    const rows = await s.t.db.select().from(webhookDeliveries);
    return rows.length === count && rows.every((row) => row.status === "delivered") ? rows : null;
  }, 60_000);
}

describe("the worker", () => {
  it("delivers every event at least once when a worker process is killed mid-run", async () => {
    const path = "/killed";
    receiver.respond(path, { status: 200, delayMs: 1500 });
    // A killed worker's deliveries waited in its memory; the next worker's recovery finds them.
    const s = await setup("killed", path, { WEBHOOK_RECOVERY_INTERVAL_MS: "2000" });
    try {
      await createTasks(s, 8);
      const first = spawnWorker(s);
      await eventually(() => receiver.on(path).length > 0, 30_000);
      first.kill("SIGKILL");
      await new Promise((resolve) => first.once("exit", resolve));
      const second = spawnWorker(s);
      try {
        const rows = await allDelivered(s, 8);
        const received = new Set(
          receiver.on(path).map((request) => request.headers["x-service-delivery"]),
        );
        for (const row of rows) expect(received.has(row.id)).toBe(true);
      } finally {
        second.kill("SIGTERM");
        await new Promise((resolve) => second.once("exit", resolve));
      }
    } finally {
      await s.t.close();
    }
  }, 90_000);

  it("never fans an event out twice with two workers running", async () => {
    const path = "/two-workers";
    receiver.respond(path, { status: 200 });
    const s = await setup("two-workers", path);
    const queues = [0, 1].map(() =>
      createBullmqQueue<WorkspaceJobs>({ redisUrl: TEST_REDIS_URL, prefix: s.queuePrefix, logger }),
    );
    const stops = await Promise.all(
      queues.map((queue) =>
        startWorker({ config: s.t.config, database: s.t.database, logger, queue }),
      ),
    );
    try {
      await createTasks(s, 30);
      const rows = await allDelivered(s, 30);
      expect(new Set(rows.map((row) => row.changeEventId)).size).toBe(30);
      const sent = receiver.on(path).map((request) => request.headers["x-service-delivery"]);
      expect(sent).toHaveLength(30);
      expect(new Set(sent).size).toBe(30);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
      await Promise.all(queues.map((queue) => queue.close()));
      await s.t.close();
    }
  }, 90_000);

  it("runs the daily pass as a queued job", async () => {
    const path = "/pass-job";
    receiver.respond(path, { status: 500 }, { status: 200 });
    const s = await setup("pass-job", path);
    const queue = createBullmqQueue<WorkspaceJobs>({
      redisUrl: TEST_REDIS_URL,
      prefix: s.queuePrefix,
      logger,
    });
    const stop = await startWorker({ config: s.t.config, database: s.t.database, logger, queue });
    try {
      await createTasks(s, 1);
      const [failed] = await eventually(async () => {
        const rows = await s.t.db.select().from(webhookDeliveries);
        return rows[0]?.status === "failed" ? rows : null;
      });
      await queue.enqueue("runRetryPass", {});
      await eventually(async () => {
        const [row] = await s.t.db
          .select()
          .from(webhookDeliveries)
          .where(eq(webhookDeliveries.id, failed!.id));
        return row?.status === "delivered" && row.passes === 1;
      });
    } finally {
      await stop();
      await queue.close();
      await s.t.close();
    }
  });
});
