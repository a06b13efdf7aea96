import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findAddonByClientId } from "../../src/oauth/addons.js";
import { issueCode, registerClient } from "../oauth/oauth-fixtures.js";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import { api } from "../support/api.js";
import { submitForHeading, submitForNotice } from "../support/browser.js";
import { redeemCode } from "../support/tokens.js";

// A developer organisation's admin edits an addon, replaces its secret and deletes it, in
// Chromium, through the pages' own links and forms.

let admin: AdminBrowser;

beforeAll(async () => {
  admin = await startAdminBrowser();
});
afterAll(() => admin?.close());

describe("an addon's page in the admin area", () => {
  it("edits the addon, replaces its secret and deletes it with its tokens", async () => {
    const client = await registerClient(admin.served.db, admin.workspaces.devco, [
      "https://gantt.example/cb",
    ]);
    const exchange = async (secret: string) =>
      redeemCode(admin.served.app, {
        code: await issueCode(admin.served.db, {
          clientRecordId: client.id,
          organization: admin.workspaces.acme,
          redirectUri: client.redirectUri,
          scopes: ["projects:read"],
        }),
        redirectUri: client.redirectUri,
        clientId: client.clientId,
        clientSecret: secret,
      });
    const token = (await exchange(client.clientSecret as string)).json().access_token as string;

    const page = await admin.pageAs("admin@devco.example");
    await page.goto(`${admin.served.url}/admin/devco/addons`);
    await page.getByRole("link", { name: "Gantt Addon" }).click();
    await page.getByRole("heading", { level: 1, name: "Gantt Addon" }).waitFor();

    await page.getByLabel("Name").fill("Gantt Charts");
    await page
      .getByLabel(/Redirect URIs/)
      .fill("https://gantt.example/cb\nhttps://gantt.example/other");
    await submitForNotice(
      page,
      page.getByRole("button", { name: "Save changes" }),
      "Addon updated.",
    );
    expect((await findAddonByClientId(admin.served.db, client.clientId))?.redirectUris).toEqual([
      "https://gantt.example/cb",
      "https://gantt.example/other",
    ]);

    await submitForHeading(
      page,
      page.getByRole("button", { name: "Replace the client secret" }),
      "New client secret",
    );
    const secret = await page.getByLabel("Client secret").inputValue();
    expect(secret).toMatch(/^svcs_/);
    expect((await exchange(client.clientSecret as string)).statusCode).toBe(401);
    expect((await exchange(secret)).statusCode).toBe(200);

    await page.getByRole("link", { name: "Back to the addon" }).click();
    await page.getByRole("link", { name: "Delete this addon" }).click();
    await submitForNotice(
      page,
      page.getByRole("button", { name: "Delete Gantt Charts" }),
      "Addon deleted",
    );
    expect(await page.getByRole("link", { name: "Gantt Charts" }).count()).toBe(0);
    expect((await api(admin.served.app, "GET", "/api/v1/me", { token })).status).toBe(401);
  });
});
