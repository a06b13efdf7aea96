import type { Page } from "playwright-core";
import { fillSignIn, submitForHeading } from "../support/browser.js";

/**
 * What the docs ask a person to do in the browser, done in Chromium the same way: the admin
 * area's forms, and the consent page.
 */

export type Admin = { baseUrl: string; email: string; password: string };

async function signInIfAsked(page: Page, admin: Admin): Promise<void> {
  if (new URL(page.url()).pathname === "/login")
    await fillSignIn(page, admin.email, admin.password);
}

async function openAdminPage(page: Page, admin: Admin, path: string): Promise<void> {
  await page.goto(`${admin.baseUrl}${path}`);
  await signInIfAsked(page, admin);
  await page.waitForURL((url) => url.pathname === path);
}

/** Your addons → Register an addon (confidential); the page shows the id and secret once. */
export async function registerAddon(
  page: Page,
  admin: Admin,
  options: { org: string; name: string; redirectUri: string },
): Promise<{ clientId: string; clientSecret: string }> {
  await openAdminPage(page, admin, `/admin/${options.org}/addons`);
  await page.getByLabel("Name").fill(options.name);
  await page.getByLabel(/^Redirect URIs/).fill(options.redirectUri);
  await submitForHeading(
    page,
    page.getByRole("button", { name: "Register addon" }),
    "Addon registered",
  );
  return {
    clientId: await page.getByLabel("Client id").inputValue(),
    clientSecret: await page.getByLabel("Client secret").inputValue(),
  };
}

/** Webhooks → Register a webhook; the page shows the signing secret once and links the webhook. */
export async function registerWebhook(
  page: Page,
  admin: Admin,
  options: { org: string; url: string; events: string[] },
): Promise<{ webhookId: string; secret: string }> {
  await openAdminPage(page, admin, `/admin/${options.org}/webhooks`);
  await page.getByLabel(/^Receiver URL/).fill(options.url);
  for (const event of options.events) await page.getByLabel(event, { exact: true }).check();
  await submitForHeading(
    page,
    page.getByRole("button", { name: "Register webhook" }),
    "Webhook registered",
  );
  const link = await page.getByRole("link", { name: "Go to the webhook" }).getAttribute("href");
  return {
    webhookId: link?.split("/").pop() ?? "",
    secret: await page.getByLabel("Signing secret").inputValue(),
  };
}

/**
 * Opens an authorization URL, signs in when asked, approves on the consent page, and returns the
 * address the browser is sent to, without needing anything to listen there.
 */
export async function approve(
  page: Page,
  admin: Admin,
  authorizationUrl: string,
  redirectUri: string,
): Promise<URL> {
  await page.goto(authorizationUrl);
  await signInIfAsked(page, admin);
  await page.getByRole("heading", { level: 1, name: /^Connect / }).waitFor();
  const callback = page.waitForRequest((request) => request.url().startsWith(redirectUri));
  await page.getByRole("button", { name: "Approve" }).click();
  return new URL((await callback).url());
}
