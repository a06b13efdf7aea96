import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { type RedisServer, startRedisServer } from "../support/clusters.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { eventually } from "../support/eventually.js";
import { mintToken, type Workspace } from "../support/fixtures.js";
import { Receiver } from "../support/receiver.js";
import {
  type Answer,
  call,
  HttpSession,
  type ServiceProcess,
  startService,
} from "./service-process.js";

// A Redis that accepts and never answers (SIGSTOP: a failover, a partition, a long script),
// watched from two `svc serve` processes sharing it.

const RATE_LIMIT_MAX = 12;
const QUEUE_PREFIX = `stalled-${randomBytes(6).toString("hex")}`;
// The bound for /readyz; requests get the same, far above their normal time plus the
// Redis deadline (250 ms here), so that only a hang (44.9 s before the fix) fails it when busy.
const ANSWER_BOUND_MS = 1000;
// The ping waits for the queue's own deadline (QUEUE_COMMAND_TIMEOUT_MS, 500 ms) first.
const PING_BOUND_MS = 1500;
const FALLBACK_WARNING = "each process counts budgets on its own";

let testDatabase: TestDatabase;
let redis: RedisServer;
let database: Database;
let receiver: Receiver;
let ws: Workspace;
let webhookId: string;
let a: ServiceProcess;
let b: ServiceProcess;

beforeAll(async () => {
  // Only Redis is stopped: the shared Postgres serves, with a database of this file's own.
  [testDatabase, redis, receiver] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    startRedisServer(),
    new Receiver().start(),
  ]);
  database = testDatabase.database;
  ({ acme: ws } = await importOAuthWorkspaces(database.db));
  ({ id: webhookId } = await createWebhook(
    database.db,
    systemAudit,
    { secretKey: TEST_SECRET_KEY, production: false, maxPerOrganization: 20 },
    { organizationId: ws.organization.id, url: receiver.url("/hook"), events: ["task.created"] },
  ));
  const env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX,
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    DATABASE_POOL_SIZE: "5",
  };
  [a, b] = await Promise.all([startService("serve", env), startService("serve", env)]);
}, 90_000);
afterAll(async () => {
  // Whatever failed, the Redis must not stay stopped: it is killed, and resumed first for good measure.
  redis?.resume();
  await Promise.all([a?.kill(), b?.kill()]);
  await redis?.kill();
  await testDatabase?.drop();
  await receiver?.stop();
});

const me = (service: ServiceProcess, token: string) => call(`${service.url}/api/v1/me`, { token });

function expectAnsweredWithin(answer: Answer, status: number, boundMs: number): void {
  expect({ status: answer.status, fast: answer.elapsedMs < boundMs }).toEqual({
    status,
    fast: true,
  });
}

describe("Redis stopped with SIGSTOP, then resumed", () => {
  it("answers reads, writes and /readyz in time while it stalls, and shares budgets again after SIGCONT", async () => {
    const mint = () => mintToken(database.db, ws);
    const [reader, writer, limitedWhileStalled, sharedOnceBack] = await Promise.all([
      mint(),
      mint(),
      mint(),
      mint(),
    ]);
    // Before: the budget is shared, so the two processes count one token's requests together.
    expect((await me(a, reader)).headers.get("ratelimit-remaining")).toBe(
      String(RATE_LIMIT_MAX - 1),
    );
    expect((await me(b, reader)).headers.get("ratelimit-remaining")).toBe(
      String(RATE_LIMIT_MAX - 2),
    );

    const admin = new HttpSession(a.url);
    await admin.signIn("admin@acme.example", PASSWORD);
    const _csrf = await admin.csrfTokenOf(`/admin/acme/webhooks/${webhookId}`);

    // Redis's MONITOR lists every command it runs, in order, from every connection.
    const watcher = new Redis(redis.url);
    const monitor = await watcher.monitor();
    let budgetCommands = 0;
    let watched = false;
    monitor.on("monitor", (_time, [command = "", ...args]: string[]) => {
      if (command === "echo" && args[0] === "watched") watched = true;
      if (/^eval/i.test(command) && args.some((arg) => arg.includes("-rate-limit:"))) {
        budgetCommands += 1;
      }
    });

    redis.pause();
    try {
      for (const service of [a, b]) {
        expectAnsweredWithin(await me(service, reader), 200, ANSWER_BOUND_MS);
        const written = await call(`${service.url}/api/v1/projects/rover/tasks`, {
          token: writer,
          body: { title: "Written while Redis stalls" },
        });
        expectAnsweredWithin(written, 200, ANSWER_BOUND_MS);
        const ready = await call(`${service.url}/readyz`);
        expectAnsweredWithin(ready, 503, ANSWER_BOUND_MS);
        expect(ready.json().checks).toEqual({ database: "ok", redis: "unavailable" });
        // The queue does not take the ping now; the delivery row waits for the recovery loop.
        const ping = await call(`${service.url}/api/v1/webhooks/ping`, {
          token: writer,
          body: { webhook_id: webhookId },
        });
        expectAnsweredWithin(ping, 200, PING_BOUND_MS);
      }

      // An admin's redelivery has nothing to fall back on: the page says to try again later.
      const [delivery] = await database.db.select().from(webhookDeliveries).limit(1);
      const redelivered = await admin.post(
        `/admin/acme/webhooks/${webhookId}/deliveries/${delivery?.id}/redeliver`,
        { _csrf },
      );
      expectAnsweredWithin(redelivered, 503, PING_BOUND_MS);
      expect(redelivered.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(redelivered.text).toContain("cannot reach its job queue");

      // Each process counts the token's requests on its own, as while Redis is down.
      const spent: number[] = [];
      for (let i = 0; i < RATE_LIMIT_MAX; i += 1)
        spent.push((await me(a, limitedWhileStalled)).status);
      expect(spent).toEqual(Array(RATE_LIMIT_MAX).fill(200));
      const refused = await me(a, limitedWhileStalled);
      expectAnsweredWithin(refused, 429, ANSWER_BOUND_MS);
      expect(refused.json()).toMatchObject({ ok: false, error: "rate_limited" });
      expect((await me(b, limitedWhileStalled)).status).toBe(200);
    } finally {
      redis.resume();
    }

    for (const service of [a, b]) {
      await eventually(async () => (await call(`${service.url}/readyz`)).status === 200);
    }
    // The stalled connection did not pile up commands: past the first, each process sent none.
    await watcher.echo("watched");
    await eventually(() => watched);
    monitor.disconnect();
    watcher.disconnect();
    expect(budgetCommands).toBeLessThanOrEqual(2);
    // One warning per process for the whole stall, not one per request.
    for (const service of [a, b]) {
      expect(service.output().split(FALLBACK_WARNING).length - 1).toBe(1);
    }

    // After SIGCONT the processes share one budget again: each answer counts the other's requests.
    const remaining: (string | null)[] = [];
    for (let i = 0; i < RATE_LIMIT_MAX; i += 1) {
      const answer = await me(i % 2 === 0 ? a : b, sharedOnceBack);
      expect(answer.status).toBe(200);
      remaining.push(answer.headers.get("ratelimit-remaining"));
    }
    expect(remaining).toEqual(
      Array.from({ length: RATE_LIMIT_MAX }, (_, i) => String(RATE_LIMIT_MAX - 1 - i)),
    );
    expect((await me(a, sharedOnceBack)).status).toBe(429);
    expect((await me(b, sharedOnceBack)).status).toBe(429);

    // The shared counts live under this deployment's prefix, and nowhere else.
    const inspector = new Redis(redis.url);
    try {
      const keys = await inspector.keys("*rate-limit:*");
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.every((key) => key.startsWith(`${QUEUE_PREFIX}-rate-limit:`))).toBe(true);
    } finally {
      inspector.disconnect();
    }
  }, 120_000);
});
