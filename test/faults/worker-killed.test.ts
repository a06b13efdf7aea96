import { randomBytes } from "node:crypto";
import { Queue } from "bullmq";
import { eq, sql } from "drizzle-orm";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, rowsOf } from "../../src/db/client.js";
import { webhookAttempts, webhookDeliveries } from "../../src/db/schema/index.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import { roverWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";
import { call, type ServiceProcess, startService } from "./service-process.js";

// The window this test opens for real: the worker has taken a delivery's job off the queue
// (BullMQ holds it as active, locked to that worker) and is loading the delivery, which the test
// keeps waiting on a table lock, so nothing has been sent. The worker is SIGKILLed right there.
// A first attempt is handed from the relay to the dispatcher without a job, so the job here is
// the quick retry of a first attempt that failed. workers.test.ts kills a worker while
// deliveries wait in its memory and its requests are at the receiver.

// Only a worker is killed: the shared servers serve, with a database and queue prefix of this
// file's own.
let testDatabase: TestDatabase;
let database: Database;
let receiver: Receiver;
const services: ServiceProcess[] = [];
const queuePrefix = `faults-${randomBytes(6).toString("hex")}`;

beforeAll(async () => {
  [testDatabase, receiver] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    new Receiver().start(),
  ]);
  database = testDatabase.database;
});
afterAll(async () => {
  await Promise.all(services.map((service) => service.kill()));
  await receiver?.stop();
  await testDatabase?.drop();
});

it("still delivers a retry whose worker was SIGKILLed between taking its job and sending it", async () => {
  const env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_QUICK_RETRIES: "1s",
    // A short lock, so a dead worker's job is taken over soon; it still outlasts an attempt.
    WORKER_LOCK_SECONDS: "3",
    WEBHOOK_DELIVERY_TIMEOUT_MS: "2000",
    DATABASE_POOL_SIZE: "5",
  };
  const { ws } = await roverWithWebhook(
    database.db,
    TEST_SECRET_KEY,
    receiver,
    "killed",
    "/killed",
  );
  const token = await mintToken(database.db, ws);
  const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue("workspace", { connection, prefix: queuePrefix });
  const locker = new pg.Client({ connectionString: testDatabase.url });
  await locker.connect();
  try {
    // The first attempt fails; the queue is paused so that the worker queues the retry's job but
    // takes it only once the test has the table locked.
    receiver.respond("/killed", { status: 500 }, { status: 200 });
    await queue.pause();
    const [api, first] = await Promise.all([
      startService("serve", env),
      startService("worker", env),
    ]);
    services.push(api, first);
    const created = await call(`${api.url}/api/v1/projects/rover/tasks`, {
      token,
      body: { title: "Claimed, never sent" },
    });
    expect(created.status, created.text).toBe(200);
    const delivery = await eventually(async () => {
      const [row] = await database.db.select().from(webhookDeliveries);
      return row?.attempts === 1 ? row : null;
    });
    expect(delivery.status).toBe("failed");
    const jobId = `delivery-${delivery.id}-a1`;
    await eventually(async () => (await queue.getJob(jobId)) !== undefined);

    await locker.query("begin");
    await locker.query("lock table webhook_deliveries in access exclusive mode");
    await queue.resume();
    // Claimed: the job is active, and the worker's load of that delivery waits on the lock.
    await eventually(async () => (await queue.getJobState(jobId)) === "active");
    await eventually(async () => {
      const waiting = await database.db.execute(sql`
        select 1 from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
          and query like '%from "webhook_deliveries" inner join "change_events"%'`);
      return rowsOf(waiting).length > 0;
    });
    first.child.kill("SIGKILL");
    await first.exited;
    expect(receiver.on("/killed")).toHaveLength(1);
    await locker.query("rollback");

    const second = await startService("worker", env);
    services.push(second);
    const delivered = await eventually(async () => {
      const [row] = await database.db
        .select()
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.id, delivery.id));
      return row?.status === "delivered" ? row : null;
    }, 90_000);
    expect(delivered.attempts).toBe(2);
    const sent = receiver.on("/killed");
    expect(sent.map((request) => request.headers["x-service-delivery"])).toEqual([
      delivery.id,
      delivery.id,
    ]);
    const attempts = await database.db
      .select()
      .from(webhookAttempts)
      .where(eq(webhookAttempts.deliveryId, delivery.id));
    expect(attempts.map((attempt) => attempt.statusCode).sort()).toEqual([200, 500]);
  } finally {
    await locker.end();
    await queue.close();
    connection.disconnect();
  }
}, 150_000);
