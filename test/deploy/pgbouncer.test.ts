import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, rowsOf } from "../../src/db/client.js";
import { openPostgres } from "../../src/db/postgres.js";
import { projects, webhookDeliveries } from "../../src/db/schema/index.js";
import {
  call,
  HttpSession,
  mintMemberToken,
  type ServiceProcess,
  startService,
  subscribeToTaskCreated,
} from "../faults/service-process.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { type Pgbouncer, startPgbouncer } from "../support/pgbouncer.js";
import { isSignedWith, Receiver } from "../support/receiver.js";

// Two `svc serve` and one `svc worker` whose pools go through a real PgBouncer in transaction
// mode, with LISTEN and the session locks on DATABASE_LISTEN_URL, straight to Postgres
// (docs/production.md, "Connection pooling with PgBouncer").

/** PgBouncer's server connections: fewer than the three processes' pools, so they are shared. */
const BOUNCER_POOL_SIZE = 3;
const TASKS = 12;
/** Set on the database, as the docs tell: PgBouncer drops the one the pool sends at startup. */
const DATABASE_STATEMENT_TIMEOUT = "7s";

let testDatabase: TestDatabase;
let database: Database;
let bouncer: Pgbouncer;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let secret: string;
let apis: ServiceProcess[];
let worker: ServiceProcess;
const receiver = new Receiver();

beforeAll(async () => {
  [testDatabase] = await Promise.all([createTestDatabase({ poolSize: 3 }), receiver.start()]);
  database = testDatabase.database;
  const name = new URL(testDatabase.url).pathname.slice(1);
  await database.db.execute(
    sql.raw(`alter database ${name} set statement_timeout = '${DATABASE_STATEMENT_TIMEOUT}'`),
  );
  bouncer = await startPgbouncer(testDatabase.url, { poolSize: BOUNCER_POOL_SIZE });
  fixtures = await importOAuthWorkspaces(database.db);
  ({ secret } = await subscribeToTaskCreated(database.db, fixtures.acme, receiver.url("/hook")));
  const env = {
    DATABASE_URL: bouncer.url,
    DATABASE_LISTEN_URL: testDatabase.url,
    DATABASE_PREPARED_STATEMENTS: "false",
    DATABASE_POOL_SIZE: "5",
    // The 1 s default answers 503 when 80 requests queue for 3 server connections on a loaded
    // machine; this test is about what passes through PgBouncer, not how long it waits.
    DATABASE_CONNECT_TIMEOUT_MS: "15000",
    // The migration lock goes through DATABASE_LISTEN_URL too.
    MIGRATE_ON_START: "true",
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `pgbouncer-${randomBytes(6).toString("hex")}`,
    // Longer than the test: only the NOTIFY heard on the listening session wakes the relay.
    WEBHOOK_RELAY_INTERVAL_MS: "600000",
    RETENTION_INTERVAL_MS: "200",
  };
  const started = await Promise.all([
    startService("serve", env),
    startService("serve", env),
    startService("worker", env),
  ]);
  apis = started.slice(0, 2);
  worker = started[2] as ServiceProcess;
}, 120_000);
afterAll(async () => {
  await Promise.all([...(apis ?? []), worker].map((service) => service?.kill()));
  await bouncer?.stop();
  await receiver.stop();
  await testDatabase?.drop();
});

function mint() {
  return mintMemberToken(database.db, fixtures.acme, [
    "projects:read",
    "tasks:read",
    "tasks:write",
  ]);
}

/** The driver's message beneath drizzle's wrapper. */
function messageOf(reason: unknown): string {
  const error = reason as { cause?: { message?: unknown }; message?: unknown };
  return String(error.cause?.message ?? error.message);
}

/** Messages of the failures among `rounds` rounds of 30 concurrent runs of one named statement. */
async function failuresThroughBouncer(preparedStatements: boolean, rounds: number) {
  const probe = openPostgres(bouncer.url, { poolSize: 6, preparedStatements });
  try {
    const query = probe.db.select({ id: projects.id }).from(projects).prepare("bouncer_probe");
    const failures: string[] = [];
    for (let round = 0; round < rounds && failures.length === 0; round += 1) {
      const runs = await Promise.allSettled(Array.from({ length: 30 }, () => query.execute()));
      for (const run of runs) if (run.status === "rejected") failures.push(messageOf(run.reason));
    }
    return failures;
  } finally {
    await probe.close();
  }
}

describe("behind PgBouncer 1.18 in transaction mode", () => {
  it("named prepared statements break, and DATABASE_PREPARED_STATEMENTS=false sends them unnamed", async () => {
    const named = await failuresThroughBouncer(true, 20);
    expect(named.length).toBeGreaterThan(0);
    for (const message of named) {
      expect(message).toMatch(/prepared statement "bouncer_probe" (already exists|does not exist)/);
    }
    expect(await failuresThroughBouncer(false, 5)).toEqual([]);
  });

  it("take the statement timeout of pooled connections from the database, not the service", async () => {
    const statementTimeout = async (url: string) => {
      const handle = openPostgres(url, { poolSize: 1, statementTimeoutMs: 3000 });
      try {
        const rows = rowsOf<{ statement_timeout: string }>(
          await handle.db.execute(sql`show statement_timeout`),
        );
        return rows[0]?.statement_timeout;
      } finally {
        await handle.close();
      }
    };
    expect(await statementTimeout(bouncer.url)).toBe(DATABASE_STATEMENT_TIMEOUT);
    expect(await statementTimeout(testDatabase.url)).toBe("3s");
  });

  it("serve concurrent reads and writes from both instances", async () => {
    const { token } = await mint();
    const paths = ["/projects", "/projects/rover", "/projects/rover/tasks", "/me"];
    const reads = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(`${apis[i % 2]?.url}/api/v1${paths[i % paths.length]}`, { token }),
      ),
    );
    expect(reads.filter((read) => read.status !== 200).map((read) => read.text)).toEqual([]);
    const titles = Array.from({ length: TASKS }, (_, i) => `Pooled ${i}`);
    const writes = await Promise.all(
      titles.map((title, i) =>
        call(`${apis[i % 2]?.url}/api/v1/projects/rover/tasks`, { token, body: { title } }),
      ),
    );
    expect(writes.filter((write) => write.status !== 200).map((write) => write.text)).toEqual([]);
    for (const api of apis) {
      const listed = await call(`${api.url}/api/v1/projects/rover/tasks?limit=100`, { token });
      expect(listed.status, listed.text).toBe(200);
      const listedTitles = (listed.json().data as { title: string }[]).map((task) => task.title);
      expect(listedTitles).toEqual(expect.arrayContaining(titles));
    }
  });

  it("deliver each write's webhook, the relay woken through the listening session", async () => {
    const received = await eventually(() => {
      const hooks = receiver.on("/hook");
      return hooks.length >= TASKS ? hooks : null;
    }, 15_000);
    expect(received).toHaveLength(TASKS);
    expect(received.every((request) => isSignedWith(secret, request))).toBe(true);
    const deliveries = await eventually(async () => {
      const rows = await database.db.select().from(webhookDeliveries);
      return rows.every((row) => row.status === "delivered") ? rows : null;
    });
    expect(deliveries).toHaveLength(TASKS);
  });

  it("refuse within a second, on the other instance, a token revoked through one", async () => {
    const { id, token } = await mint();
    const me = (api: ServiceProcess | undefined) =>
      call(`${api?.url}/api/v1/me`, { token }).then((answer) => answer.status);
    // Cached by both; only the NOTIFY on the listening session can make the other forget it.
    expect(await me(apis[0])).toBe(200);
    expect(await me(apis[1])).toBe(200);
    expect(await me(apis[1])).toBe(200);
    const admin = new HttpSession(apis[0]?.url ?? "");
    await admin.signIn("admin@acme.example", PASSWORD);
    const _csrf = await admin.csrfTokenOf("/admin/acme/tokens");
    const revoked = await admin.post(`/admin/acme/tokens/${id}/revoke`, { _csrf });
    expect(revoked.status).toBe(303);
    const deadline = Date.now() + 1000;
    let status = await me(apis[1]);
    while (status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await me(apis[1]);
    }
    expect(status).toBe(401);
    expect(await me(apis[0])).toBe(401);
  });

  it("run retention again and again, its lock taken and released on the session", async () => {
    const runs = await eventually(() => {
      const count = worker.output().split('"msg":"retention ran"').length - 1;
      return count >= 3 ? count : null;
    }, 10_000);
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(worker.output()).not.toContain("webhook loop failed");
  });
});
