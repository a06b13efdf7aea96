import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook, registrationSettingsOf } from "../../src/webhooks/service.js";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import { submitForNotice } from "../support/browser.js";
import { recordDelivery } from "../support/deliveries.js";
import { eventually } from "../support/eventually.js";
import { Receiver } from "../support/receiver.js";

let admin: AdminBrowser;
let receiver: Receiver;

beforeAll(async () => {
  [admin, receiver] = await Promise.all([
    startAdminBrowser({ deliveries: true }),
    new Receiver().start(),
  ]);
});
afterAll(async () => {
  await admin?.close();
  await receiver?.stop();
});

/** A webhook on `path` of the receiver with one delivery the daily passes gave up on. */
async function webhookWithExhaustedDelivery(organizationId: string, path: string) {
  const webhook = await createWebhook(
    admin.served.db,
    systemAudit,
    registrationSettingsOf(admin.served.config),
    { organizationId, url: receiver.url(path), events: ["task.created"] },
  );
  const deliveryId = await recordDelivery(admin.served.db, {
    organizationId,
    webhookId: webhook.id,
    status: "exhausted",
    passes: admin.served.config.webhooks.retryPasses,
  });
  return { webhookId: webhook.id, deliveryId };
}

const statusOf = async (deliveryId: string) =>
  (
    await admin.served.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.id, deliveryId))
  )[0]?.status;

describe("Retry all exhausted deliveries", () => {
  it("sends the webhook's exhausted delivery again from its page, and no other organisation's", async () => {
    const ours = await webhookWithExhaustedDelivery(admin.workspaces.acme.organization.id, "/ours");
    const theirs = await webhookWithExhaustedDelivery(
      admin.workspaces.devco.organization.id,
      "/theirs",
    );
    const page = await admin.pageAs();
    await page.goto(`${admin.served.url}/admin/acme/webhooks`);
    expect(await page.getByText("--include-exhausted").count()).toBe(0);
    await page.goto(`${admin.served.url}/admin/acme/webhooks/${ours.webhookId}`);

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
