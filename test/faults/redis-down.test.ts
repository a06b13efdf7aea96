import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { type RedisServer, startRedisServer } from "../support/clusters.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { eventually } from "../support/eventually.js";
import { mintToken, type Workspace } from "../support/fixtures.js";
import { roverWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";
import { type Answer, call, type ServiceProcess, startService } from "./service-process.js";

// One Redis outage, watched from two processes: `svc start` (API and worker) and `svc serve`.
// Redis is SIGKILLed while tasks are being written, and comes back empty: every job it held
// and every rate-limit count is gone. Postgres stays up: the suite's shared server serves.

const RATE_LIMIT_MAX = 20;
// Writes cycle through this many tokens, each spending a few requests of its budget at most.
const WRITER_TOKENS = 60;

let testDatabase: TestDatabase;
let redis: RedisServer;
let database: Database;
let receiver: Receiver;
let ws: Workspace;
let a: ServiceProcess;
let b: ServiceProcess;

beforeAll(async () => {
  [testDatabase, redis, receiver] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    startRedisServer(),
    new Receiver().start(),
  ]);
  database = testDatabase.database;
  ({ ws } = await roverWithWebhook(database.db, TEST_SECRET_KEY, receiver, "redis-down", "/hook"));
  const env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `faults-${randomBytes(6).toString("hex")}`,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_QUICK_RETRIES: "",
    // Jobs lost with Redis are queued again once 3 s overdue (a minute by default).
    WEBHOOK_RECOVERY_INTERVAL_MS: "1000",
    WEBHOOK_OVERDUE_AFTER_MS: "3000",
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    DATABASE_POOL_SIZE: "5",
  };
  [a, b] = await Promise.all([startService("start", env), startService("serve", env)]);
}, 90_000);
afterAll(async () => {
  await Promise.all([a?.kill(), b?.kill()]);
  await testDatabase?.drop();
  await receiver?.stop();
  await redis?.kill();
});

const readiness = async (service: ServiceProcess) => {
  const answer = await call(`${service.url}/readyz`);
  return { status: answer.status, checks: answer.json().checks };
};

const me = (service: ServiceProcess, token: string) =>
  call(`${service.url}/api/v1/me`, { token }).then((answer) => answer.status);

/**
 * Spends `count` requests of `token` through the services in turn; returns their statuses.
 */
async function spend(services: ServiceProcess[], token: string, count: number) {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += 1) {
    statuses.push(await me(services[i % services.length] as ServiceProcess, token));
  }
  return statuses;
}

function expectRateLimited(answer: Answer): void {
  expect(answer.status).toBe(429);
  expect(answer.json()).toMatchObject({ ok: false, error: "rate_limited" });
  expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
}

describe("Redis killed and restarted empty while writes go on", () => {
  it("keeps writing, says not ready, limits each process on its own, and delivers every change once", async () => {
    // The writes spread over many tokens, so that the low rate limit never refuses one.
    const writerTokens = await Promise.all(
      Array.from({ length: WRITER_TOKENS }, () => mintToken(database.db, ws)),
    );
    const [limitedWhileDown, sharedOnceBack] = await Promise.all([
      mintToken(database.db, ws),
      mintToken(database.db, ws),
    ]);
    const written: string[] = [];
    const refused: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i += 1) {
        const service = i % 2 === 0 ? a : b;
        const answer = await call(`${service.url}/api/v1/projects/rover/tasks`, {
          token: writerTokens[i % WRITER_TOKENS],
          body: { title: `Write ${i}` },
        });
        if (answer.status === 200) written.push(answer.json().data.id);
        else refused.push(`${answer.status} ${answer.text}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    await eventually(() => written.length >= 3);
    await redis.kill();
    const writtenBefore = written.length;

    for (const service of [a, b]) {
      const ready = await eventually(async () => {
        const answer = await readiness(service);
        return answer.status === 503 ? answer : null;
      });
      expect(ready.checks).toMatchObject({ database: "ok", redis: "unavailable" });
    }
    // Each process counts the token's requests on its own while Redis is away.
    expect(await spend([a], limitedWhileDown, RATE_LIMIT_MAX)).toEqual(
      Array(RATE_LIMIT_MAX).fill(200),
    );
    expectRateLimited(await call(`${a.url}/api/v1/me`, { token: limitedWhileDown }));
    expect(await me(b, limitedWhileDown)).toBe(200);
    await eventually(() => written.length >= writtenBefore + 5);

    await redis.restartEmpty();
    for (const service of [a, b]) {
      await eventually(async () => (await readiness(service)).status === 200);
    }
    writing = false;
    await writer;
    expect(refused).toEqual([]);

    // With Redis back, the two processes share one budget again.
    expect(await spend([a, b], sharedOnceBack, RATE_LIMIT_MAX)).toEqual(
      Array(RATE_LIMIT_MAX).fill(200),
    );
    expectRateLimited(await call(`${a.url}/api/v1/me`, { token: sharedOnceBack }));
    expectRateLimited(await call(`${b.url}/api/v1/me`, { token: sharedOnceBack }));

    // Jobs queued while Redis was dead were lost with it: the recovery loop queues their
    // deliveries again once they are overdue.
    const arrived = await eventually(() => {
      const targets = receiver.targetIds("/hook");
      return written.every((id) => targets.includes(id)) ? targets : null;
    }, 60_000);
    expect(arrived.toSorted()).toEqual(written.toSorted());
    // The receiver answers before the worker records the attempt: wait for the records.
    const deliveries = await eventually(async () => {
      const rows = await database.db.select().from(webhookDeliveries);
      return rows.every((row) => row.status === "delivered") ? rows : null;
    });
    expect(deliveries).toHaveLength(written.length);
    expect(deliveries.every((row) => row.attempts === 1)).toBe(true);
  }, 120_000);
});
