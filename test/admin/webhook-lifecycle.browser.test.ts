import { pino } from "pino";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import { createDeliveryWorker, type DeliveryWorker } from "../../src/webhooks/delivery-worker.js";
import {
  createWebhook,
  listWebhooks,
  registrationSettingsOf,
  setWebhookEnabled,
} from "../../src/webhooks/service.js";
import { verifyWebhookSignature } from "../../src/webhooks/verify.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import {
  launchBrowser,
  type ServedApp,
  serveTestApp,
  signedInContext,
  submitForHeading,
  submitForNotice,
} from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { type Received, Receiver } from "../support/receiver.js";

const logger = pino({ level: "silent" });
const queue = createInProcessQueue<WorkspaceJobs>(logger);
let deliveries: DeliveryWorker | undefined;
const contexts: BrowserContext[] = [];
let browser: Browser;
let served: ServedApp;
let receiver: Receiver;
let organizationId: string;
let base: string;

beforeAll(async () => {
  receiver = await new Receiver().start();
  [browser, served] = await Promise.all([
    launchBrowser(),
    serveTestApp({ WEBHOOK_QUICK_RETRIES: "" }, { queue }),
  ]);
  deliveries = createDeliveryWorker({ db: served.db, config: served.config, logger, queue });
  await queue.startWorker(deliveries.handlers);
  const { acme } = await importOAuthWorkspaces(served.db);
  organizationId = acme.organization.id;
  base = `${served.url}/admin/acme`;
});
afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});
afterAll(async () => {
  await browser?.close();
  await deliveries?.close();
  await queue.close();
  await served?.close();
  await receiver?.stop();
});

async function adminPage(): Promise<Page> {
  const { context, page } = await signedInContext(
    browser,
    served.url,
    "admin@acme.example",
    PASSWORD,
  );
  contexts.push(context);
  return page;
}

function register(path: string) {
  return createWebhook(served.db, systemAudit, registrationSettingsOf(served.config), {
    organizationId,
    url: receiver.url(path),
    events: ["task.created"],
  });
}

function signedWith(secret: string, request: Received): boolean {
  return verifyWebhookSignature({
    secret,
    rawBody: request.rawBody,
    timestamp: request.headers["x-service-timestamp"] as string | undefined,
    signature: request.headers["x-service-signature"] as string | undefined,
  }).ok;
}

/** A delivery the relay recorded and has not sent yet. */
async function pendingDelivery(webhookId: string): Promise<void> {
  const [event] = await served.db
    .insert(changeEvents)
    .values({
      organizationId,
      type: "task.created",
      action: "created",
      targetKind: "task",
      targetId: "t-1",
      diff: { before: {}, after: {} },
      fannedOutAt: new Date(),
    })
    .returning({ id: changeEvents.id });
  if (event === undefined) throw new Error("no event");
  await served.db.insert(webhookDeliveries).values({ webhookId, changeEventId: event.id });
}

describe("a webhook's lifecycle in the admin area", () => {
  it("edits the URL and events, refusing a private address, then replaces the secret", async () => {
    const hook = await register("/before");
    const page = await adminPage();
    await page.goto(`${base}/webhooks/${hook.id}`);
    await page.getByRole("link", { name: "Edit URL and events" }).click();
    await page.getByRole("heading", { level: 1, name: "Edit webhook" }).waitFor();
    const url = page.getByLabel(/Receiver URL/);
    expect(await url.inputValue()).toBe(receiver.url("/before"));
    expect(await page.getByLabel("task.created").isChecked()).toBe(true);

    await url.fill("https://169.254.169.254/latest/meta-data");
    await page.getByRole("button", { name: "Save changes" }).click();
    const refusal = page.locator("#webhook-url-error");
    await refusal.waitFor();
    expect(await refusal.innerText()).toMatch(/^url: /);
    expect(await url.getAttribute("aria-invalid")).toBe("true");

    await url.fill(receiver.url("/after"));
    await page.getByLabel("page.updated").check();
    await submitForNotice(
      page,
      page.getByRole("button", { name: "Save changes" }),
      "Webhook updated.",
    );
    const [updated] = (await listWebhooks(served.db, organizationId)).filter(
      (webhook) => webhook.id === hook.id,
    );
    expect(updated?.url).toBe(receiver.url("/after"));
    expect(updated?.events.toSorted()).toEqual(["page.updated", "task.created"]);

    await submitForHeading(
      page,
      page.getByRole("button", { name: "Replace signing secret" }),
      "Signing secret replaced",
    );
    const secret = await page.getByLabel("Signing secret").inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(hook.secret);

    await page.getByRole("link", { name: "Go to the webhook" }).click();
    await submitForNotice(page, page.getByRole("button", { name: "Send a ping" }), /Ping queued/);
    const [ping] = await eventually(() =>
      receiver.on("/after").length > 0 ? receiver.on("/after") : null,
    );
    expect(signedWith(secret, ping!)).toBe(true);
    expect(signedWith(hook.secret, ping!)).toBe(false);
    expect(receiver.on("/before")).toHaveLength(0);
  });

  it("asks before deleting, showing the held deliveries it drops", async () => {
    const hook = await register("/doomed");
    await setWebhookEnabled(served.db, systemAudit, { id: hook.id, enabled: false });
    await pendingDelivery(hook.id);
    await pendingDelivery(hook.id);
    const page = await adminPage();
    await page.goto(`${base}/webhooks/${hook.id}`);
    await page.getByRole("link", { name: "Delete webhook" }).click();
    await page.getByRole("heading", { level: 1, name: "Delete webhook" }).waitFor();
    expect(await page.locator("#delete-due").innerText()).toBe("0");
    expect(await page.locator("#delete-held").innerText()).toBe("2");
    expect(await listWebhooks(served.db, organizationId)).toContainEqual(
      expect.objectContaining({ id: hook.id }),
    );

    const notice = await submitForNotice(
      page,
      page.getByRole("button", { name: "Delete webhook" }),
      /Webhook deleted/,
    );
    expect(notice).toContain("dropped 0 deliveries that were due and 2 deliveries held");
    expect(new URL(page.url()).pathname).toBe("/admin/acme/webhooks");
    expect(
      (await listWebhooks(served.db, organizationId)).map((webhook) => webhook.id),
    ).not.toContain(hook.id);
  });
});
