import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findAddonByClientId } from "../../src/oauth/addons.js";
import {
  importOAuthWorkspaces,
  issueCode,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import {
  launchBrowser,
  type ServedApp,
  serveTestApp,
  signedInContext,
  submitForHeading,
  submitForNotice,
} from "../support/browser.js";
import { redeemCode } from "../support/tokens.js";

// A developer organisation's admin edits an addon, replaces its secret and deletes it, in
// Chromium, through the pages' own links and forms.

let browser: Browser;
let served: ServedApp;
let context: BrowserContext | undefined;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;

beforeAll(async () => {
  [browser, served] = await Promise.all([launchBrowser(), serveTestApp()]);
  fixtures = await importOAuthWorkspaces(served.db);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await served?.close();
});

describe("an addon's page in the admin area", () => {
  it("edits the addon, replaces its secret and deletes it with its tokens", async () => {
    const client = await registerClient(served.db, fixtures.devco, ["https://gantt.example/cb"]);
    const exchange = async (secret: string) =>
      redeemCode(served.app, {
        code: await issueCode(served.db, {
          clientRecordId: client.id,
          organization: fixtures.acme,
          redirectUri: client.redirectUri,
          scopes: ["projects:read"],
        }),
        redirectUri: client.redirectUri,
        clientId: client.clientId,
        clientSecret: secret,
      });
    const token = (await exchange(client.clientSecret as string)).json().access_token as string;

    const signedIn = await signedInContext(browser, served.url, "admin@devco.example", PASSWORD);
    context = signedIn.context;
    const { page } = signedIn;
    await page.goto(`${served.url}/admin/devco/addons`);
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
    expect((await findAddonByClientId(served.db, client.clientId))?.redirectUris).toEqual([
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
    expect((await api(served.app, "GET", "/api/v1/me", { token })).status).toBe(401);
  });
});
