import { eq } from "drizzle-orm";
import { pino } from "pino";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import { createDeliveryWorker, type DeliveryWorker } from "../../src/webhooks/delivery-worker.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import {
  launchBrowser,
  type ServedApp,
  serveTestApp,
  signedInContext,
  submitForNotice,
} from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { Receiver } from "../support/receiver.js";

const logger = pino({ level: "silent" });
const queue = createInProcessQueue<WorkspaceJobs>(logger);
let deliveries: DeliveryWorker | undefined;
let context: BrowserContext | undefined;
let browser: Browser;
let served: ServedApp;
let receiver: Receiver;
let organizations: Awaited<ReturnType<typeof importOAuthWorkspaces>>;

beforeAll(async () => {
  receiver = await new Receiver().start();
  [browser, served] = await Promise.all([
    launchBrowser(),
    serveTestApp({ WEBHOOK_QUICK_RETRIES: "" }, { queue }),
  ]);
  deliveries = createDeliveryWorker({ db: served.db, config: served.config, logger, queue });
  await queue.startWorker(deliveries.handlers);
  organizations = await importOAuthWorkspaces(served.db);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await deliveries?.close();
  await queue.close();
  await served?.close();
  await receiver?.stop();
});

/** A webhook on `path` of the receiver with one delivery the daily passes gave up on. */
async function webhookWithExhaustedDelivery(organizationId: string, path: string) {
  const webhook = await createWebhook(
    served.db,
    systemAudit,
    { secretKey: served.config.secretKey, production: false, maxPerOrganization: 20 },
    { organizationId, url: receiver.url(path), events: ["task.created"] },
  );
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
  const [delivery] = await served.db
    .insert(webhookDeliveries)
    .values({
      webhookId: webhook.id,
      changeEventId: event.id,
      status: "exhausted",
      passes: served.config.webhooks.retryPasses,
    })
    .returning({ id: webhookDeliveries.id });
  if (delivery === undefined) throw new Error("no delivery");
  return { webhookId: webhook.id, deliveryId: delivery.id };
}

const statusOf = async (deliveryId: string) =>
  (await served.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId)))[0]
    ?.status;

describe("Retry all exhausted deliveries", () => {
  it("sends the webhook's exhausted delivery again from its page, and no other organisation's", async () => {
    const ours = await webhookWithExhaustedDelivery(organizations.acme.organization.id, "/ours");
    const theirs = await webhookWithExhaustedDelivery(
      organizations.devco.organization.id,
      "/theirs",
    );
    const signedIn = await signedInContext(browser, served.url, "admin@acme.example", PASSWORD);
    context = signedIn.context;
    const { page } = signedIn;
    await page.goto(`${served.url}/admin/acme/webhooks`);
    expect(await page.getByText("--include-exhausted").count()).toBe(0);
    await page.goto(`${served.url}/admin/acme/webhooks/${ours.webhookId}`);

    const notice = await submitForNotice(
      page,
      page.getByRole("button", { name: "Retry all exhausted deliveries" }),
      "taken back from exhausted",
    );
    expect(notice).toContain(
      "1 delivery taken back from exhausted; 1 delivery queued for another attempt.",
    );
    await eventually(async () => (await statusOf(ours.deliveryId)) === "delivered");
    expect(receiver.on("/ours")).toHaveLength(1);
    expect(await statusOf(theirs.deliveryId)).toBe("exhausted");
    expect(receiver.on("/theirs")).toHaveLength(0);

    // Nothing exhausted is left, so the button is gone.
    await page.reload();
    const button = page.getByRole("button", { name: "Retry all exhausted deliveries" });
    expect(await button.count()).toBe(0);
  });
});
