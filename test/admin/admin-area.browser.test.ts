import { createHmac } from "node:crypto";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PASSWORD } from "../oauth/oauth-fixtures.js";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import { api } from "../support/api.js";
import { fillSignIn, submitForHeading, submitForNotice } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { Receiver } from "../support/receiver.js";

let admin: AdminBrowser;
let receiver: Receiver;
let base: string;

beforeAll(async () => {
  [admin, receiver] = await Promise.all([
    startAdminBrowser({ deliveries: true }),
    new Receiver().start(),
  ]);
  base = `${admin.served.url}/admin/acme`;
});
afterEach(() => admin.closePages());
afterAll(async () => {
  await admin?.close();
  await receiver?.stop();
});

const heading = (page: Page) => page.getByRole("heading", { level: 1 }).innerText();

describe("the admin area", () => {
  it("sends a signed-out visitor to sign in and back, and refuses a member with a 403 page", async () => {
    const page = await admin.anonymousPage();
    await page.goto(`${base}/tokens`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await fillSignIn(page, "admin@acme.example", PASSWORD);
    await page.waitForURL(`${base}/tokens`);
    expect(await heading(page)).toBe("API tokens");

    const member = await admin.pageAs("member@acme.example");
    const response = await member.goto(`${admin.served.url}/admin`);
    expect(response?.status()).toBe(403);
    expect(await heading(member)).toBe("Admins only");
    expect((await member.goto(`${base}/tokens`))?.status()).toBe(403);
  });

  it("mints a token with the chosen scopes and expiry, shows it once, lists it and revokes it", async () => {
    const page = await admin.pageAs("admin@acme.example");
    await page.goto(`${base}/tokens`);
    await page.getByLabel("Name (optional)").fill("Reporting script");
    await page.getByLabel("Read projects").check();
    await page.getByLabel("Create and update tasks").check();
    await page.getByLabel("Expires").selectOption({ label: "In 30 days" });
    await submitForHeading(page, page.getByRole("button", { name: "Mint token" }), "Token created");
    const token = await page.getByLabel(/^Token/).inputValue();
    expect(token).toMatch(/^svc_live_/);

    const me = await api(admin.served.app, "GET", "/api/v1/me", { token });
    expect(me.body.data.scopes).toEqual(["projects:read", "tasks:write"]);
    expect(me.body.data.pluginId).toBeNull();
    const created = await api(admin.served.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Minted in the browser" },
    });
    expect(created.status).toBe(200);

    await page.goto(`${base}/tokens`);
    const row = page.getByRole("row", { name: /Reporting script/ });
    const text = await row.innerText();
    expect(text).toContain("projects:read, tasks:write");
    expect(text).toContain("Ada Admin");
    const cells = row.getByRole("cell");
    expect(await cells.nth(4).innerText()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/); // last used
    expect(await cells.nth(5).innerText()).toMatch(/^\d{4}-\d{2}-\d{2}/); // expires
    expect(await page.content()).not.toContain(token);
    // Revoking asks first, on a page of its own (no script needed).
    await row.getByRole("link", { name: "Revoke Reporting script" }).click();
    await page.getByRole("heading", { level: 1, name: "Revoke this token?" }).waitFor();
    const revoked = page.getByRole("button", { name: "Revoke token" });
    expect(await submitForNotice(page, revoked, "revoked")).toBe("Token revoked.");
    expect((await api(admin.served.app, "GET", "/api/v1/me", { token })).status).toBe(401);
  });

  it("registers an addon, showing the secret once, and refuses a bad redirect URI", async () => {
    const page = await admin.pageAs("admin@acme.example");
    await page.goto(`${base}/addons`);
    await page.getByLabel("Name").fill("Acme Timeline");
    await page
      .getByLabel(/^Redirect URIs/)
      .fill("http://localhost/cb\nhttps://timeline.acme.example/cb");
    await submitForHeading(
      page,
      page.getByRole("button", { name: "Register addon" }),
      "Addon registered",
    );
    const clientId = await page.getByLabel("Client id").inputValue();
    const secret = await page.getByLabel("Client secret").inputValue();
    expect(clientId).toMatch(/^svcc_/);
    expect(secret).toMatch(/^svcs_/);
    await page.goto(`${base}/addons`);
    const listed = await page.locator("main").innerText();
    expect(listed).toContain(clientId);
    expect(listed).toContain("https://timeline.acme.example/cb");
    expect(await page.content()).not.toContain(secret);

    await page.getByLabel("Name").fill("Broken");
    await page.getByLabel(/^Redirect URIs/).fill("http://timeline.acme.example/cb");
    const [response] = await Promise.all([
      page.waitForResponse((candidate) => candidate.request().method() === "POST"),
      page.getByRole("button", { name: "Register addon" }).click(),
    ]);
    expect(response.status()).toBe(400);
    expect(await page.getByRole("alert").innerText()).toContain("must use https");
    expect(await page.getByLabel("Name").inputValue()).toBe("Broken");
  });

  it("registers a webhook with event checkboxes, pings it, shows the log, redelivers, disables", async () => {
    const page = await admin.pageAs("admin@acme.example");
    await page.goto(`${base}/webhooks`);
    await page.getByLabel("Receiver URL").fill(receiver.url("/hooks/admin"));
    await page.getByLabel("task.created").check();
    await page.getByLabel("page.updated").check();
    await submitForHeading(
      page,
      page.getByRole("button", { name: "Register webhook" }),
      "Webhook registered",
    );
    const secret = await page.getByLabel("Signing secret").inputValue();
    expect(secret).toMatch(/^whsec_/);

    await page.getByRole("link", { name: "Go to the webhook" }).click();
    await page.waitForURL(/\/webhooks\/[0-9a-f-]{36}$/);
    expect(await page.locator("dl").innerText()).toContain("page.updated, task.created");
    const sendPing = page.getByRole("button", { name: "Send a ping" });
    await submitForNotice(page, sendPing, "Ping queued");
    await eventually(() => receiver.on("/hooks/admin").length === 1);
    const [ping] = receiver.on("/hooks/admin");
    expect(ping?.headers["x-service-event"]).toBe("change.created");
    const timestamp = String(ping?.headers["x-service-timestamp"]);
    const expected = createHmac("sha256", secret)
      .update(`${timestamp}.`)
      .update(ping?.rawBody as Buffer)
      .digest("hex");
    expect(ping?.headers["x-service-signature"]).toBe(`sha256=${expected}`);

    const logRow = async () => {
      await page.reload();
      const row = page.getByRole("row", { name: /change\.created/ });
      return (await row.count()) === 1 ? row.innerText() : "";
    };
    const delivered = await eventually(async () => {
      const text = await logRow();
      return text.includes("delivered") && text;
    });
    expect(delivered).toMatch(/delivered\s+1\s+204/);

    const redeliver = page.getByRole("button", { name: /^Redeliver change\.created/ });
    expect(await submitForNotice(page, redeliver, "Redelivery")).toBe("Redelivery queued.");
    await eventually(() => receiver.on("/hooks/admin").length === 2);
    const [first, second] = receiver.on("/hooks/admin");
    expect(second?.headers["x-service-delivery"]).toBe(first?.headers["x-service-delivery"]);
    expect(await eventually(async () => /delivered\s+2\s+204/.test(await logRow()))).toBe(true);

    const disable = page.getByRole("button", { name: "Disable" });
    expect(await submitForNotice(page, disable, "disabled")).toBe("Webhook disabled.");
    expect(await page.locator("dl").innerText()).toContain("Disabled");
    const enable = page.getByRole("button", { name: "Enable" });
    expect(await submitForNotice(page, enable, "enabled")).toBe("Webhook enabled.");
    expect(await page.locator("dl").innerText()).toContain("Enabled");

    // A failing receiver: the log shows every response, and "retry failed deliveries now"
    // runs the pass for this organisation.
    receiver.respond("/hooks/admin", { status: 500 }, { status: 200 });
    await submitForNotice(page, sendPing, "Ping queued");
    const failedRow = async () => {
      await page.reload();
      const rows = page.getByRole("row", { name: /failed/ });
      return (await rows.count()) === 1 ? rows.innerText() : "";
    };
    expect(await eventually(async () => /failed\s+1\s+500/.test(await failedRow()))).toBe(true);
    const webhookUrl = page.url();
    await page.goto(`${base}/webhooks`);
    const retryNow = page.getByRole("button", { name: "Retry failed deliveries now" });
    expect(await submitForNotice(page, retryNow, "queued")).toContain("1 failed delivery queued");
    await page.goto(webhookUrl);
    const retried = await eventually(async () => {
      await page.reload();
      const rows = page.getByRole("row", { name: /500, 200/ });
      return (await rows.count()) === 1 ? rows.innerText() : "";
    });
    expect(retried).toMatch(/delivered\s+2\s+500, 200/);
  });
});
