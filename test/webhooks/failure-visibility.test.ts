import { Writable } from "node:stream";
import { eq, sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDeliveries, webhooks } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { queueRetryPass } from "../../src/webhooks/enqueue-attempts.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import { InjectSession } from "../support/browser.js";
import { runCli } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

/**
 * A receiver that fails every delivery is seen without opening its webhook: in the worker's log
 * at warn and error, and in the admin area's webhook list and `svc webhook list`.
 */

type LogLine = Record<string, unknown> & { level: number; msg: string };

const lines: LogLine[] = [];
let p: Pipeline;
let receiver: Receiver;
let acme: Awaited<ReturnType<typeof importOAuthWorkspaces>>["acme"];
let failing: string;
let healthy: string;
let failingDeliveries: string[];

const WARN = 40;
const ERROR = 50;
const DEBUG = 20;

const logged = (message: string, webhookId: string) =>
  lines.filter((line) => line.msg === message && line.webhookId === webhookId);

/** The lines once there are `count` of them. */
const loggedOnce = (message: string, webhookId: string, count = 1) =>
  eventually(() => {
    const found = logged(message, webhookId);
    return found.length === count ? found : null;
  });

const deliveryIdsOf = async (webhookId: string) =>
  (
    await p.db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.webhookId, webhookId))
  ).map((row) => row.id);

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of chunk.toString().split("\n")) {
        if (text !== "") lines.push(JSON.parse(text));
      }
      done();
    },
  });
  // One daily pass before a delivery is exhausted, a day of failures before a webhook is disabled,
  // and no probe of an open breaker while the file runs.
  p = await startPipeline(
    {
      WEBHOOK_RETRY_PASSES: "1",
      WEBHOOK_AUTO_DISABLE_DAYS: "1",
      WEBHOOK_BREAKER_COOLDOWN_SECONDS: "3600",
    },
    { logger: pino({ level: "debug" }, sink) },
  );
  receiver = await new Receiver().start();
  receiver.respond("/failing", { status: 500 });
  ({ acme } = await importOAuthWorkspaces(p.db));
  const settings = { secretKey: p.config.secretKey, production: false, maxPerOrganization: 20 };
  const register = async (path: string) =>
    (
      await createWebhook(p.db, systemAudit, settings, {
        organizationId: acme.organization.id,
        url: receiver.url(path),
        events: ["task.created"],
      })
    ).id;
  failing = await register("/failing");
  healthy = await register("/healthy");
  // Ten failures in a row open the failing webhook's breaker.
  const token = await mintToken(p.db, acme);
  for (let i = 0; i < 10; i++) {
    const res = await api(p.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: `Task ${i}` },
    });
    expect(res.status).toBe(200);
  }
  await loggedOnce("webhook breaker opened", failing);
  await eventually(() => receiver.on("/healthy").length === 10);
  failingDeliveries = await deliveryIdsOf(failing);
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});

describe("the worker's log", () => {
  it("logs each failed attempt at warn with the webhook, the delivery, the outcome and the status", async () => {
    const failed = await loggedOnce("webhook delivery attempt failed", failing, 10);
    expect(failed.map((line) => line.deliveryId).sort()).toEqual([...failingDeliveries].sort());
    for (const line of failed) {
      expect(line).toMatchObject({
        level: WARN,
        outcome: "failed_status",
        statusCode: 500,
        error: "HTTP 500",
        status: "failed",
      });
    }
    // Deliveries that arrive stay below the level an alert on warnings reads.
    const delivered = await loggedOnce("webhook delivery attempted", healthy, 10);
    for (const line of delivered) {
      expect(line).toMatchObject({ level: DEBUG, outcome: "delivered", statusCode: 204 });
    }
    expect(lines.filter((line) => line.webhookId === healthy && line.level >= WARN)).toEqual([]);
  });

  it("logs the breaker pausing the webhook at warn, with its reason", () => {
    expect(logged("webhook breaker opened", failing)).toEqual([
      expect.objectContaining({ level: WARN, reason: "10 failed attempts in a row", failures: 10 }),
    ]);
  });

  it("logs a delivery going exhausted at error, once", async () => {
    receiver.respond("/doomed", { status: 503 });
    const doomed = await workspaceWithWebhook(p, receiver, "doomed", "/doomed");
    await doomed.createTask("Never arrives");
    await loggedOnce("webhook delivery attempt failed", doomed.webhook.id);
    // The daily pass, as the worker's cron runs it: its one pass fails, and nothing is left.
    await queueRetryPass(p, { webhookId: doomed.webhook.id });
    const [exhausted] = await loggedOnce(
      "webhook delivery exhausted: no retries left",
      doomed.webhook.id,
    );
    const [deliveryId] = await deliveryIdsOf(doomed.webhook.id);
    expect(exhausted).toMatchObject({
      level: ERROR,
      deliveryId,
      trigger: "pass",
      outcome: "failed_status",
      statusCode: 503,
      status: "exhausted",
    });

    // A failing webhook whose failures outlast WEBHOOK_AUTO_DISABLE_DAYS is disabled at warn.
    await p.db
      .update(webhooks)
      .set({ failingSince: sql`now() - interval '2 days'` })
      .where(eq(webhooks.id, doomed.webhook.id));
    await doomed.createTask("Fails once more");
    const [disabled] = await loggedOnce("webhook disabled automatically", doomed.webhook.id);
    expect(disabled).toMatchObject({
      level: WARN,
      reason: "disabled automatically: every delivery failed for 1 days",
    });
    expect(logged("webhook delivery exhausted: no retries left", doomed.webhook.id)).toHaveLength(
      1,
    );
  });
});

describe("the webhook list", () => {
  it("shows in the admin area that every delivery of a webhook fails", async () => {
    const admin = new InjectSession(p.app);
    await admin.signIn("admin@acme.example", PASSWORD);
    const page = await admin.get("/admin/acme/webhooks");
    expect(page.statusCode).toBe(200);
    const rowOf = (path: string) =>
      page.body.split("<tr>").find((row) => row.includes(receiver.url(path))) ?? "";
    const failingRow = rowOf("/failing");
    expect(failingRow).toContain('<span class="badge badge--failed">failed</span> HTTP 500');
    expect(failingRow).toMatch(/Paused until .* after 10 failures/);
    expect(failingRow).toContain(
      '<td data-label="Last 24 h" class="num">0%<br><span class="muted">0 of 10</span>',
    );
    const healthyRow = rowOf("/healthy");
    expect(healthyRow).toContain('<span class="badge badge--delivered">delivered</span> HTTP 204');
    expect(healthyRow).toContain(
      '<td data-label="Last 24 h" class="num">100%<br><span class="muted">10 of 10</span>',
    );
  });

  it("gives `svc webhook list --json` the same fields", async () => {
    const env = { DATABASE_URL: p.config.databaseUrl ?? "" };
    const [res, human] = await Promise.all([
      runCli(["webhook", "list", "--org", "acme", "--json"], env),
      runCli(["webhook", "list", "--org", "acme"], env),
    ]);
    expect(res.code, res.stderr).toBe(0);
    const listed = JSON.parse(res.stdout) as Record<string, unknown>[];
    const byId = new Map(listed.map((webhook) => [webhook.id, webhook]));
    expect(byId.get(failing)).toMatchObject({
      enabled: true,
      heldDeliveries: 0,
      exhaustedDeliveries: 0,
      lastDelivery: { status: "failed", statusCode: 500, error: "HTTP 500" },
      last24Hours: { delivered: 0, failed: 10, successRate: 0 },
    });
    expect(failingDeliveries).toContain(
      (byId.get(failing)?.lastDelivery as { id: string } | undefined)?.id,
    );
    expect(byId.get(healthy)).toMatchObject({
      lastDelivery: { status: "delivered", statusCode: 204, error: null },
      last24Hours: { delivered: 10, failed: 0, successRate: 1 },
    });

    const failingLine = human.stdout.split("\n").find((line) => line.startsWith(failing));
    expect(failingLine).toMatch(
      /enabled, paused until \S+ {2}last failed \(HTTP 500\) \S+ {2}24h 0% of 10/,
    );
  });
});
