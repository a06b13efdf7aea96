import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { webhookAttempts, webhookDeliveries, webhooks } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { api } from "../support/api.js";
import { runCli } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";
import { type Pipeline, startPipeline } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;
let ws: Workspace;
let token: string;
let path = "/";
let counter = 0;

async function register(hookPath: string) {
  return createWebhook(
    p.db,
    systemAudit,
    { secretKey: p.config.secretKey, production: false, maxPerOrganization: 20 },
    { organizationId: ws.organization.id, url: receiver.url(hookPath), events: ["task.created"] },
  );
}

async function createTask(title = "Retry me") {
  const res = await api(p.app, "POST", "/api/v1/projects/rover/tasks", { token, body: { title } });
  expect(res.status).toBe(200);
}

async function deliveryOf(webhookId: string) {
  return eventually(async () => {
    const [row] = await p.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.webhookId, webhookId));
    return row !== undefined && row.attempts > 0 ? row : null;
  });
}

/** The daily pass, run the way an operator runs it, with its log on (it goes to stderr). */
async function retryPass() {
  const res = await runCli(["webhook", "retry-failed", "--json"], {
    DATABASE_URL: p.config.databaseUrl ?? "",
    WEBHOOK_RETRY_PASSES: "2",
    LOG_LEVEL: "info",
  });
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout) as { id: string; status: string }[];
}

// An attempt's limit, short here so the test of a late answer waits 3 s rather than the 10 s
// default (which test/config checks).
const DELIVERY_TIMEOUT_MS = 2000;

beforeAll(async () => {
  p = await startPipeline({
    WEBHOOK_RETRY_PASSES: "2",
    WEBHOOK_DELIVERY_TIMEOUT_MS: String(DELIVERY_TIMEOUT_MS),
  });
  receiver = await new Receiver().start();
  ws = await importFixture(
    p.db,
    workspaceDocument("retries", {
      projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
    }),
  );
  token = await mintToken(p.db, ws);
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});
beforeEach(async () => {
  counter += 1;
  path = `/hook-${counter}`;
  // Each test starts with no earlier test's failed delivery left for the pass to pick up.
  await p.db.update(webhooks).set({ enabled: false });
});

describe("a failed delivery", () => {
  it.each([
    ["answers 500", { status: 500 }, /HTTP 500/],
    ["redirects", { status: 302, location: "http://127.0.0.1:1/elsewhere" }, /HTTP 302/],
  ])(
    "that %s is recorded and re-sent by the pass with the same delivery id",
    async (_name, failure, error) => {
      receiver.respond(path, failure, { status: 200 });
      const { id } = await register(path);
      await createTask();
      const delivery = await deliveryOf(id);
      expect(delivery.status).toBe("failed");
      const [attempt] = await p.db
        .select()
        .from(webhookAttempts)
        .where(eq(webhookAttempts.deliveryId, delivery.id));
      expect(attempt).toMatchObject({
        statusCode: failure.status,
        error: expect.stringMatching(error),
      });
      expect(attempt!.durationMs).toBeGreaterThanOrEqual(0);

      const retried = await retryPass();
      expect(retried).toEqual([expect.objectContaining({ id: delivery.id, status: "delivered" })]);
      const [first, second] = receiver.on(path);
      expect(second!.headers["x-service-delivery"]).toBe(first!.headers["x-service-delivery"]);
      expect(second!.rawBody.equals(first!.rawBody)).toBe(true);
    },
  );

  it("counts an answer later than the delivery timeout as a failure", async () => {
    receiver.respond(path, { status: 200, delayMs: DELIVERY_TIMEOUT_MS + 1000 }, { status: 200 });
    const { id } = await register(path);
    await createTask();
    const delivery = await deliveryOf(id);
    expect(delivery.status).toBe("failed");
    const [attempt] = await p.db
      .select()
      .from(webhookAttempts)
      .where(eq(webhookAttempts.deliveryId, delivery.id));
    expect(attempt!.error).toMatch(/timed out/);
    expect(attempt!.statusCode).toBeNull();
    expect((await retryPass())[0]).toMatchObject({ id: delivery.id, status: "delivered" });
  });

  it("is exhausted after the configured passes and then left alone", async () => {
    receiver.respond(path, { status: 503 });
    const { id } = await register(path);
    await createTask();
    const delivery = await deliveryOf(id);
    expect((await retryPass())[0]).toMatchObject({ id: delivery.id, status: "failed" });
    expect((await retryPass())[0]).toMatchObject({ id: delivery.id, status: "exhausted" });
    expect(await retryPass()).toEqual([]);
    expect(receiver.on(path)).toHaveLength(3);
    const [row] = await p.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.id, delivery.id));
    expect(row).toMatchObject({ status: "exhausted", attempts: 3, passes: 2 });
  });

  it("disables its webhook once every delivery failed for 5 days in a row", async () => {
    receiver.respond(path, { status: 500 });
    const { id } = await register(path);
    await p.db
      .update(webhooks)
      .set({ failingSince: sql`now() - interval '5 days 1 hour'` })
      .where(eq(webhooks.id, id));
    await createTask();
    await deliveryOf(id);
    const [webhook] = await p.db.select().from(webhooks).where(eq(webhooks.id, id));
    expect(webhook).toMatchObject({
      enabled: false,
      disabledReason: expect.stringMatching(/automatically/),
    });
    const listed = await runCli(["webhook", "list", "--org", "retries", "--json"], {
      DATABASE_URL: p.config.databaseUrl ?? "",
    });
    expect(JSON.parse(listed.stdout)).toContainEqual(
      expect.objectContaining({
        id,
        url: receiver.url(path),
        events: ["task.created"],
        enabled: false,
      }),
    );
  });

  it("clears the failure run on a success", async () => {
    receiver.respond(path, { status: 200 });
    const { id } = await register(path);
    await p.db
      .update(webhooks)
      .set({ failingSince: sql`now() - interval '2 days'` })
      .where(eq(webhooks.id, id));
    await createTask();
    await eventually(async () => (await deliveryOf(id)).status === "delivered");
    const [webhook] = await p.db.select().from(webhooks).where(eq(webhooks.id, id));
    expect(webhook).toMatchObject({ enabled: true, failingSince: null });
  });
});

describe("quick retries", () => {
  let quick: Pipeline;
  beforeAll(async () => {
    quick = await startPipeline({ WEBHOOK_QUICK_RETRIES: "1s,1s" });
  });
  afterAll(() => quick.close());

  it("re-send a failed delivery on the ladder before it falls to the daily pass", async () => {
    const qws = await importFixture(
      quick.db,
      workspaceDocument("quick", {
        projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
      }),
    );
    receiver.respond(path, { status: 500 }, { status: 500 }, { status: 200 });
    await createWebhook(
      quick.db,
      systemAudit,
      { secretKey: quick.config.secretKey, production: false, maxPerOrganization: 20 },
      { organizationId: qws.organization.id, url: receiver.url(path), events: ["task.created"] },
    );
    const qtoken = await mintToken(quick.db, qws);
    await api(quick.app, "POST", "/api/v1/projects/rover/tasks", {
      token: qtoken,
      body: { title: "Ladder" },
    });
    await eventually(() => receiver.on(path).length === 3, 15_000);
    const ids = new Set(receiver.on(path).map((request) => request.headers["x-service-delivery"]));
    expect(ids.size).toBe(1);
    const [row] = await quick.db.select().from(webhookDeliveries);
    await eventually(async () => {
      const [current] = await quick.db
        .select()
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.id, row!.id));
      return current?.status === "delivered" && current.attempts === 3;
    });
  });
});
