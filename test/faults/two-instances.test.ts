import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import { webhookAttempts, webhookDeliveries } from "../../src/db/schema/index.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import {
  call,
  HttpSession,
  mintMemberToken,
  type ServiceProcess,
  startService,
  subscribeToTaskCreated,
} from "./service-process.js";

// A deployment in miniature: two `svc serve` and two `svc worker` processes on one PostgreSQL
// and one Redis (the suite's shared ones, with a database and queue prefix of this file's own).

const RATE_LIMIT_MAX = 20;
const TASKS = 30;

let testDatabase: TestDatabase;
let database: Database;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let apis: ServiceProcess[];
let workers: ServiceProcess[];

/**
 * A receiver that fails each delivery's first attempt and accepts its second, and counts the
 * requests per delivery id.
 */
class FailingOnceReceiver {
  readonly requests = new Map<string, number>();
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        const id = String(request.headers["x-service-delivery"]);
        const seen = (this.requests.get(id) ?? 0) + 1;
        this.requests.set(id, seen);
        response.writeHead(seen === 1 ? 500 : 204).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

const receiver = new FailingOnceReceiver();

beforeAll(async () => {
  [testDatabase] = await Promise.all([createTestDatabase({ poolSize: 3 }), receiver.start()]);
  database = testDatabase.database;
  fixtures = await importOAuthWorkspaces(database.db);
  await subscribeToTaskCreated(database.db, fixtures.acme, receiver.url);
  const env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `faults-${randomBytes(6).toString("hex")}`,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    // One quick retry, a second after the first attempt fails.
    WEBHOOK_QUICK_RETRIES: "1s",
    // Thirty refused first attempts trip the breaker; its probe comes a second later, not 30 s.
    WEBHOOK_BREAKER_COOLDOWN_SECONDS: "1",
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    DATABASE_POOL_SIZE: "5",
  };
  const started = await Promise.all([
    startService("serve", env),
    startService("serve", env),
    startService("worker", env),
    startService("worker", env),
  ]);
  apis = started.slice(0, 2);
  workers = started.slice(2);
}, 120_000);
afterAll(async () => {
  await Promise.all([...(apis ?? []), ...(workers ?? [])].map((service) => service.kill()));
  await receiver.stop();
  await testDatabase?.drop();
});

function mint() {
  return mintMemberToken(database.db, fixtures.acme, ["projects:read", "tasks:write"]);
}

const me = (api: ServiceProcess, token: string) =>
  call(`${api.url}/api/v1/me`, { token }).then((answer) => answer.status);

describe("two API processes and two workers", () => {
  it("share one rate-limit budget per token", async () => {
    const { token } = await mint();
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT_MAX; i += 1) statuses.push(await me(apis[i % 2]!, token));
    expect(statuses).toEqual(Array(RATE_LIMIT_MAX).fill(200));
    expect(await me(apis[0]!, token)).toBe(429);
    expect(await me(apis[1]!, token)).toBe(429);
  });

  it("fan each event out once and send each delivery once per attempt", async () => {
    // Each task on a token of its own, so the low rate limit refuses none.
    const tokens = await Promise.all(Array.from({ length: TASKS }, () => mint()));
    await Promise.all(
      tokens.map(async ({ token }, i) => {
        const created = await call(`${apis[i % 2]!.url}/api/v1/projects/rover/tasks`, {
          token,
          body: { title: `Task ${i}` },
        });
        expect(created.status, created.text).toBe(200);
      }),
    );
    const deliveries = await eventually(async () => {
      const rows = await database.db.select().from(webhookDeliveries);
      return rows.length === TASKS && rows.every((row) => row.status === "delivered") ? rows : null;
    }, 60_000);
    expect(new Set(deliveries.map((row) => row.changeEventId)).size).toBe(TASKS);
    // First attempt refused, quick retry accepted: two attempts each, each sent exactly once.
    expect(deliveries.every((row) => row.attempts === 2)).toBe(true);
    expect([...receiver.requests.keys()].toSorted()).toEqual(
      deliveries.map((row) => row.id).toSorted(),
    );
    expect([...receiver.requests.values()].every((sent) => sent === 2)).toBe(true);
    expect(await database.db.select().from(webhookAttempts)).toHaveLength(2 * TASKS);
  }, 90_000);

  it("refuse, on both instances, a token revoked through one of them", async () => {
    const { id, token } = await mint();
    expect(await me(apis[0]!, token)).toBe(200);
    expect(await me(apis[1]!, token)).toBe(200);
    const admin = new HttpSession(apis[0]!.url);
    await admin.signIn("admin@acme.example", PASSWORD);
    const _csrf = await admin.csrfTokenOf("/admin/acme/tokens");
    const revoked = await admin.post(`/admin/acme/tokens/${id}/revoke`, { _csrf });
    expect(revoked.status).toBe(303);
    expect(await me(apis[0]!, token)).toBe(401);
    // A refused token spends its address's budget, so the other instance is asked sparingly.
    const refusedByOther = async () => {
      for (let tries = 0; tries < 16; tries += 1) {
        const status = await me(apis[1]!, token);
        if (status !== 200) return status;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      return 200;
    };
    expect(await refusedByOther()).toBe(401);
  });
});
