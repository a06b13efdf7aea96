import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemAudit } from "../../src/modules/audit/service.js";
import {
  createWebhook,
  listWebhooks,
  registrationSettingsOf,
  setWebhookEnabled,
} from "../../src/webhooks/service.js";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import { submitForHeading, submitForNotice } from "../support/browser.js";
import { recordDelivery } from "../support/deliveries.js";
import { eventually } from "../support/eventually.js";
import { isSignedWith, Receiver } from "../support/receiver.js";

let admin: AdminBrowser;
let receiver: Receiver;
let organizationId: string;
let base: string;

beforeAll(async () => {
  [admin, receiver] = await Promise.all([
    startAdminBrowser({ deliveries: true }),
    new Receiver().start(),
  ]);
  organizationId = admin.workspaces.acme.organization.id;
  base = `${admin.served.url}/admin/acme`;
});
afterEach(() => admin.closePages());
afterAll(async () => {
  await admin?.close();
  await receiver?.stop();
});

function register(path: string) {
  return createWebhook(admin.served.db, systemAudit, registrationSettingsOf(admin.served.config), {
    organizationId,
    url: receiver.url(path),
    events: ["task.created"],
  });
}

/** A delivery the relay recorded and has not sent yet. */
async function pendingDelivery(webhookId: string): Promise<void> {
  await recordDelivery(admin.served.db, { organizationId, webhookId });
}

describe("a webhook's lifecycle in the admin area", () => {
  it("edits the URL and events, refusing a private address, then replaces the secret", async () => {
    const hook = await register("/before");
    const page = await admin.pageAs();
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
    const [updated] = (await listWebhooks(admin.served.db, organizationId)).filter(
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
    expect(isSignedWith(secret, ping!)).toBe(true);
    expect(isSignedWith(hook.secret, ping!)).toBe(false);
    expect(receiver.on("/before")).toHaveLength(0);
  });

  it("asks before deleting, showing the held deliveries it drops", async () => {
    const hook = await register("/doomed");
    await setWebhookEnabled(admin.served.db, systemAudit, { id: hook.id, enabled: false });
    await pendingDelivery(hook.id);
    await pendingDelivery(hook.id);
    const page = await admin.pageAs();
    await page.goto(`${base}/webhooks/${hook.id}`);
    await page.getByRole("link", { name: "Delete webhook" }).click();
    await page.getByRole("heading", { level: 1, name: "Delete webhook" }).waitFor();
    expect(await page.locator("#delete-due").innerText()).toBe("0");
    expect(await page.locator("#delete-held").innerText()).toBe("2");
    expect(await listWebhooks(admin.served.db, organizationId)).toContainEqual(
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
      (await listWebhooks(admin.served.db, organizationId)).map((webhook) => webhook.id),
    ).not.toContain(hook.id);
  });
});
