/**
 * `npm run screenshots`: the admin area and the consent page as docs/screenshots/*.png.
 *
 * Everything runs in this process and needs nothing set up: an in-memory embedded database
 * (PGlite) with the real migrations, the demo workspace, a developer organisation with an addon,
 * a webhook with a week of recorded deliveries, and the app on a free local port. Chromium is
 * Debian's (`/usr/bin/chromium`, or CHROMIUM_PATH), driven by playwright-core as in the tests.
 */
import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { eq } from "drizzle-orm";
import { pino } from "pino";
import { chromium, type Page } from "playwright-core";
import { buildApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import type { Db } from "../src/db/client.js";
import { openPglite } from "../src/db/embedded.js";
import { changeEvents, users, webhookAttempts, webhookDeliveries } from "../src/db/schema/index.js";
import { seedDemo } from "../src/demo/seed.js";
import { importWorkspace } from "../src/import/service.js";
import { systemAudit } from "../src/modules/audit/service.js";
import { createToken } from "../src/modules/tokens/service.js";
import { findOrganizationBySlug } from "../src/modules/users/service.js";
import { registerAddon } from "../src/oauth/addons.js";
import { approveAuthorization } from "../src/oauth/grants.js";
import { createInProcessQueue } from "../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../src/queue/jobs.js";
import { webhookPayload } from "../src/webhooks/payload.js";
import { createWebhook } from "../src/webhooks/service.js";
import { computeSignature } from "../src/webhooks/verify.js";

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "docs", "screenshots");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const REDIRECT = "https://gantt.example/oauth/callback";
const HOUR = 3_600_000;

/** A deterministic pseudo-random sequence, so reruns draw the same week. */
function sequence(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

async function recordWeekOfDeliveries(
  db: Db,
  organizationId: string,
  webhookId: string,
  secret: string,
) {
  const random = sequence(7);
  const now = Date.now();
  const types = ["task.created", "task.updated", "page.updated"];
  for (let hoursAgo = 7 * 24 - 1; hoursAgo >= 0; hoursAgo--) {
    // Busier in working hours, and an outage of the receiver two days ago.
    const hour = new Date(now - hoursAgo * HOUR).getUTCHours();
    const count = Math.round((hour >= 8 && hour <= 18 ? 6 : 1) * random() + (hoursAgo < 3 ? 2 : 0));
    for (let i = 0; i < count; i++) {
      const createdAt = new Date(now - hoursAgo * HOUR - random() * HOUR * 0.9);
      const outage = hoursAgo >= 46 && hoursAgo <= 49;
      const failed = outage || random() < 0.04;
      const pending = hoursAgo === 0 && i === 0;
      const type = types[Math.floor(random() * types.length)] ?? "task.created";
      const [event] = await db
        .insert(changeEvents)
        .values({
          organizationId,
          type,
          action: type.split(".")[1] ?? "created",
          targetKind: type.split(".")[0] ?? "task",
          targetId: `ROV-${100 + Math.floor(random() * 400)}`,
          diff: { before: { status: "todo" }, after: { status: "in_progress" } },
          occurredAt: createdAt,
          fannedOutAt: createdAt,
        })
        .returning();
      if (event === undefined) throw new Error("no event");
      const status = pending ? "pending" : failed ? (outage ? "exhausted" : "failed") : "delivered";
      const [delivery] = await db
        .insert(webhookDeliveries)
        .values({
          webhookId,
          changeEventId: event.id,
          status,
          attempts: pending ? 0 : failed ? 3 : 1,
          createdAt,
          lastAttemptAt: pending ? null : createdAt,
          deliveredAt: status === "delivered" ? createdAt : null,
        })
        .returning({ id: webhookDeliveries.id });
      if (delivery === undefined) throw new Error("no delivery");
      if (pending) continue;
      const body = JSON.stringify(webhookPayload(event));
      const attempts = failed ? 3 : 1;
      for (let attempt = 0; attempt < attempts; attempt++) {
        const attemptedAt = new Date(createdAt.getTime() + attempt * 90_000);
        const timestamp = Math.floor(attemptedAt.getTime() / 1000);
        await db.insert(webhookAttempts).values({
          deliveryId: delivery.id,
          attemptedAt,
          durationMs: Math.round(40 + random() * 180),
          statusCode: failed ? (outage ? 503 : 500) : 204,
          error: null,
          responseSnippet: failed
            ? "<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1></body></html>"
            : "",
          requestHeaders: {
            "Content-Type": "application/json",
            "User-Agent": "workspace-service-webhooks/1.0",
            "X-Service-Event": type,
            "X-Service-Delivery": delivery.id,
            "X-Service-Timestamp": String(timestamp),
            "X-Service-Signature": computeSignature(secret, timestamp, body),
          },
        });
      }
    }
  }
}

async function shoot(page: Page, name: string, options: { fullPage?: boolean } = {}) {
  await page.screenshot({
    path: path.join(OUT, `${name}.png`),
    fullPage: options.fullPage ?? true,
  });
  console.log(`docs/screenshots/${name}.png`);
}

async function main() {
  mkdirSync(OUT, { recursive: true });
  const logger = pino({ level: "silent" });
  const database = await openPglite(undefined, { template: null });
  await database.migrate();
  const db = database.db;
  const seeded = await seedDemo(db);
  if (!seeded.seeded) throw new Error("the demo workspace was already there");
  const developer = await importWorkspace(db, {
    organization: { slug: "gantt-labs", name: "Gantt Labs" },
    users: [{ email: "dev@gantt.example", name: "Dana Developer", role: "admin" }],
  });
  const [admin] = await db.select().from(users).where(eq(users.email, seeded.adminEmail));
  if (admin === undefined) throw new Error("no demo admin");

  const queue = createInProcessQueue<WorkspaceJobs>(logger);
  const config = loadConfig({
    NODE_ENV: "development",
    SECRET_KEY: "screenshots-secret-key-0123456789abcdefghij",
    PUBLIC_URL: "http://127.0.0.1:0",
    LOG_LEVEL: "silent",
  });
  const app = await buildApp({ config, database, logger, queue });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const demoOrganization = await findOrganizationBySlug(db, seeded.organizationSlug);
  if (demoOrganization === null) throw new Error("no demo organisation");
  const demoOrganizationId = demoOrganization.id;

  const addon = await registerAddon(db, systemAudit, {
    organizationId: developer.organization.id,
    name: "Gantt Charts",
    redirectUris: [REDIRECT],
    isPublic: false,
  });
  await approveAuthorization(db, systemAudit, {
    clientRecordId: addon.id,
    organizationId: demoOrganizationId,
    userId: admin.id,
    redirectUri: REDIRECT,
    scopes: ["projects:read", "tasks:read", "milestones:read"],
    codeChallenge: null,
    codeTtlSeconds: 600,
  });
  await registerAddon(db, systemAudit, {
    organizationId: demoOrganizationId,
    name: "Release notes bot",
    redirectUris: ["https://bots.demo.example/callback"],
    isPublic: false,
    createdBy: admin.id,
  });
  for (const [name, scopes, days] of [
    ["CI pipeline", ["tasks:write", "tasks:read"], 90],
    ["Reporting script", ["projects:read", "milestones:read"], null],
  ] as const) {
    await createToken(db, systemAudit, {
      organizationId: demoOrganizationId,
      userId: admin.id,
      scopes: [...scopes],
      name,
      expiresAt: days === null ? null : new Date(Date.now() + days * 86_400_000),
    });
  }
  const webhook = await createWebhook(
    db,
    systemAudit,
    { secretKey: config.secretKey, production: false },
    {
      organizationId: demoOrganizationId,
      url: "http://127.0.0.1:9/hooks/workspace",
      events: ["task.created", "task.updated", "page.updated"],
      createdBy: admin.id,
    },
  );
  await recordWeekOfDeliveries(db, demoOrganizationId, webhook.id, webhook.secret);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.getByLabel("Email").fill(seeded.adminEmail);
    await page.getByLabel("Password").fill(seeded.adminPassword);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((url) => !url.pathname.startsWith("/login"));
    const admin = `${base}/admin/${seeded.organizationSlug}`;

    await page.goto(admin);
    await shoot(page, "overview");
    await page.goto(`${admin}/tokens`);
    await shoot(page, "tokens");
    await page.getByRole("link", { name: "Revoke CI pipeline" }).click();
    await shoot(page, "token-revoke");
    await page.goto(`${admin}/connections`);
    await shoot(page, "connected-addons");
    await page.goto(`${admin}/webhooks/${webhook.id}`);
    // Open the latest failed delivery: its attempts, response and signed headers.
    const failedRow = page.locator("tr.delivery-row", { hasText: "failed" }).first();
    const failedId = await failedRow.getAttribute("data-delivery");
    await page
      .locator(`tr.delivery-detail[data-delivery="${failedId}"] details`)
      .evaluate((details) => details.setAttribute("open", ""));
    await shoot(page, "webhook");
    const authorize = new URLSearchParams({
      client_id: addon.clientId,
      redirect_uri: REDIRECT,
      response_type: "code",
      scope: "projects:read tasks:read tasks:write",
      state: "screenshot",
    });
    await page.goto(`${base}/oauth/authorize?${authorize.toString()}`);
    await shoot(page, "consent");

    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${admin}/webhooks/${webhook.id}`);
    await shoot(page, "webhook-dark", { fullPage: false });

    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 375, height: 812 });
    await page.goto(`${base}/oauth/authorize?${authorize.toString()}`);
    await shoot(page, "consent-375");
    await page.goto(`${admin}/webhooks/${webhook.id}`);
    await shoot(page, "webhook-375", { fullPage: false });
  } finally {
    await browser.close();
    await app.close();
    await queue.close();
    await database.close();
  }
}

await main();
