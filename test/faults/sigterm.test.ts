import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import { changeEvents, webhookAttempts, webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import {
  importFixture,
  mintToken,
  project,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";
import { Receiver } from "../support/receiver.js";
import { call, type Exit, HANG_MS, type ServiceProcess, startService } from "./service-process.js";

// Neither server is stopped here: the shared ones serve, with a database and queue prefix of
// this file's own.
let testDatabase: TestDatabase;
let database: Database;
let receiver: Receiver;
let ws: Workspace;
let token: string;
let env: Record<string, string>;
const services: ServiceProcess[] = [];

beforeAll(async () => {
  [testDatabase, receiver] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    new Receiver().start(),
  ]);
  database = testDatabase.database;
  ws = await importFixture(
    database.db,
    workspaceDocument("sigterm", { projects: [project("rover")] }),
  );
  token = await mintToken(database.db, ws);
  env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `faults-${randomBytes(6).toString("hex")}`,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_QUICK_RETRIES: "",
    RATE_LIMIT_MAX: "100000",
    DATABASE_POOL_SIZE: "5",
  };
});
afterAll(async () => {
  await Promise.all(services.map((service) => service.kill()));
  await receiver?.stop();
  await testDatabase?.drop();
});

async function start(command: ServiceProcess["command"], extra: Record<string, string> = {}) {
  const service = await startService(command, { ...env, ...extra });
  services.push(service);
  return service;
}

/**
 * A task created by a client that sends its headers, waits until the service has read them
 * (it asks `Expect: 100-continue`, which Node answers once the request is dispatched), and
 * sends the body only when told: a request in flight for as long as the test wants.
 */
function slowTaskCreate(service: ServiceProcess, title: string) {
  const body = JSON.stringify({ title });
  const request = httpRequest(`${service.url}/api/v1/projects/rover/tasks`, {
    method: "POST",
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      expect: "100-continue",
    },
  });
  const dispatched = new Promise<void>((resolve) => request.once("continue", () => resolve()));
  const answered = new Promise<{ status: number; text: string } | { error: string }>((resolve) => {
    request.once("error", (error) => resolve({ error: String(error) }));
    request.once("response", (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
    });
  });
  request.flushHeaders();
  return { dispatched, answered, sendBody: () => request.end(body) };
}

/** Whether a new connection to the service's port is accepted. */
function acceptsConnections(service: ServiceProcess): Promise<boolean> {
  const { port } = new URL(service.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The process's exit, or "running" if it has not exited within `ms`. */
function exitWithin(service: ServiceProcess, ms: number): Promise<Exit | "running"> {
  return Promise.race([
    service.exited,
    new Promise<"running">((resolve) => setTimeout(() => resolve("running"), ms)),
  ]);
}

describe("SIGTERM", () => {
  it("lets a request and a delivery in flight finish, then exits 0", async () => {
    const webhook = await createWebhook(
      database.db,
      systemAudit,
      { secretKey: TEST_SECRET_KEY, production: false, maxPerOrganization: 20 },
      { organizationId: ws.organization.id, url: receiver.url("/slow"), events: ["task.created"] },
    );
    // The receiver holds the delivery's request for seconds before it answers.
    receiver.respond("/slow", { status: 200, delayMs: 3000 });
    const service = await start("start");
    const created = await call(`${service.url}/api/v1/projects/rover/tasks`, {
      token,
      body: { title: "Delivered during shutdown" },
    });
    expect(created.status, created.text).toBe(200);
    await eventually(() => receiver.on("/slow").length === 1);
    const slow = slowTaskCreate(service, "Written during shutdown");
    await slow.dispatched;

    service.child.kill("SIGTERM");
    await eventually(async () => !(await acceptsConnections(service)), HANG_MS);
    expect(await exitWithin(service, 500)).toBe("running");
    slow.sendBody();
    const answer = await slow.answered;
    expect(answer).toMatchObject({ status: 200 });

    expect(await exitWithin(service, 20_000), service.output()).toEqual({ code: 0, signal: null });
    const [delivery] = await database.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.webhookId, webhook.id));
    expect(delivery).toMatchObject({ status: "delivered", attempts: 1 });
    const attempts = await database.db
      .select()
      .from(webhookAttempts)
      .where(eq(webhookAttempts.deliveryId, delivery?.id ?? ""));
    expect(attempts).toMatchObject([{ statusCode: 200 }]);
    expect(receiver.on("/slow")).toHaveLength(1);
    const taskId = "status" in answer ? JSON.parse(answer.text).data.id : "";
    const events = await database.db
      .select()
      .from(changeEvents)
      .where(eq(changeEvents.targetId, taskId));
    expect(events.map((event) => event.type)).toEqual(["task.created"]);
  }, 60_000);

  it("exits at once, non-zero, on a second SIGTERM", async () => {
    const service = await start("serve", { SHUTDOWN_TIMEOUT_MS: "60000" });
    const slow = slowTaskCreate(service, "Never finished");
    await slow.dispatched;
    service.child.kill("SIGTERM");
    // Still waiting for the request in flight, which never sends its body.
    expect(await exitWithin(service, 1000)).toBe("running");
    service.child.kill("SIGTERM");
    const exit = await exitWithin(service, HANG_MS);
    expect(exit).not.toBe("running");
    expect(exit).not.toEqual({ code: 0, signal: null });
    await slow.answered;
  });

  it("exits 1 once SHUTDOWN_TIMEOUT_MS has passed with a request still in flight (SIGINT alike)", async () => {
    const service = await start("serve", { SHUTDOWN_TIMEOUT_MS: "1500" });
    const slow = slowTaskCreate(service, "Never finished either");
    await slow.dispatched;
    service.child.kill("SIGINT");
    expect(await exitWithin(service, 1500 + HANG_MS), service.output()).toEqual({
      code: 1,
      signal: null,
    });
    await slow.answered;
  });
});
