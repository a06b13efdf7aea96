/// <reference lib="dom" />

import axe from "axe-core";
import { eq } from "drizzle-orm";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { users, webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken } from "../../src/modules/tokens/service.js";
import { createPingDelivery, createWebhook } from "../../src/webhooks/service.js";
import { issueCode, registerClient } from "../oauth/oauth-fixtures.js";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import type { ServedApp } from "../support/browser.js";

/**
 * Every admin page and the OAuth pages (consent, returning to the addon, page expired): no serious or critical axe-core violation, no
 * horizontal scrolling of the page at 375 px, and actions that work from the keyboard alone.
 */

const axeSource = axe.source;
let admin: AdminBrowser;
let served: ServedApp;
let pages: { name: string; path: string }[];
/** A request the consent page signs out of: no `state`, so it goes back to the addon. */
let returnPath: string;
const REDIRECT = "https://addon.example/callback";

beforeAll(async () => {
  admin = await startAdminBrowser();
  served = admin.served;
  const { acme, devco } = admin.workspaces;
  const acmeAdmin = acme.users?.[0];
  if (acmeAdmin === undefined) throw new Error("no admin");
  const [adminRow] = await served.db
    .select({ id: users.id })
    .from(users)
    .where(eq(users.email, acmeAdmin.email));
  if (adminRow === undefined) throw new Error("no admin row");
  const client = await registerClient(served.db, devco, [REDIRECT], { name: "Gantt Addon" });
  await issueCode(served.db, {
    clientRecordId: client.id,
    organization: acme,
    redirectUri: REDIRECT,
    scopes: ["projects:read", "tasks:write"],
  });
  await createToken(served.db, systemAudit, {
    organizationId: acme.organization.id,
    userId: adminRow.id,
    scopes: ["projects:read"],
    expiresAt: null,
    name: "Reporting script",
  });
  const webhook = await createWebhook(
    served.db,
    systemAudit,
    { secretKey: served.config.secretKey, production: false, maxPerOrganization: 20 },
    {
      organizationId: acme.organization.id,
      url: "http://127.0.0.1:9/in",
      events: ["task.created"],
    },
  );
  await createPingDelivery(served.db, {
    organizationId: acme.organization.id,
    webhookId: webhook.id,
    actorId: null,
  });
  const [delivery] = await served.db.select({ id: webhookDeliveries.id }).from(webhookDeliveries);
  if (delivery === undefined) throw new Error("no delivery");
  const developed = await registerClient(served.db, acme, [REDIRECT], { name: "Acme Addon" });
  const base = "/admin/acme";
  const authorize = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: REDIRECT,
    response_type: "code",
    scope: "projects:read tasks:read tasks:write",
    state: "st-1",
  });
  const { state: _state, ...withoutState } = Object.fromEntries(authorize);
  returnPath = `/oauth/authorize?${new URLSearchParams(withoutState).toString()}`;
  pages = [
    { name: "sign-in", path: "/login" },
    { name: "overview", path: base },
    { name: "tokens", path: `${base}/tokens` },
    { name: "addons", path: `${base}/addons` },
    { name: "addon", path: `${base}/addons/${developed.id}` },
    { name: "addon-delete", path: `${base}/addons/${developed.id}/delete` },
    { name: "connections", path: `${base}/connections` },
    { name: "webhooks", path: `${base}/webhooks` },
    { name: "webhook", path: `${base}/webhooks/${webhook.id}` },
    { name: "webhook-edit", path: `${base}/webhooks/${webhook.id}/edit` },
    { name: "webhook-delete", path: `${base}/webhooks/${webhook.id}/delete` },
    { name: "activity", path: `${base}/activity` },
    { name: "consent", path: `/oauth/authorize?${authorize.toString()}` },
  ];
});
afterEach(() => admin.closePages());
afterAll(() => admin?.close());

async function adminPage(viewport?: { width: number; height: number }): Promise<Page> {
  const page = await admin.pageAs();
  if (viewport !== undefined) await page.setViewportSize(viewport);
  return page;
}

type Violation = {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
};

/**
 * axe-core run in the page. The pages' CSP allows no script, so the source is evaluated through
 * the DevTools protocol (page.evaluate), which the CSP does not govern, rather than a script tag.
 */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const { violations, passes } = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run(): Promise<{ violations: Violation[]; passes: unknown[] }> };
      }
    ).axe;
    const results = await axe.run();
    return { violations: results.violations, passes: results.passes.length };
  });
  // axe really ran: a page always passes some of its rules.
  expect(passes).toBeGreaterThan(10);
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`,
    );
}

/**
 * The two OAuth pages no GET shows for good: "Returning to the addon", held there by answering
 * its onward navigation with a 204 (which leaves the page in place), and "This page has
 * expired", the answer to a consent form shown to another member than the one signed in now.
 */
async function visitOAuthOutcomes(page: Page, check: (name: string) => Promise<void>) {
  let leftForAddon: () => void = () => {};
  const navigatedOn = new Promise<void>((resolve) => (leftForAddon = resolve));
  await page.route(`${new URL(REDIRECT).origin}/**`, async (route) => {
    await route.fulfill({ status: 204 });
    leftForAddon();
  });
  await page.goto(`${served.url}${returnPath}`);
  await navigatedOn;
  await page.getByRole("heading", { level: 1, name: "Returning to the addon" }).waitFor();
  await check("returning to the addon");
  await page.unroute(`${new URL(REDIRECT).origin}/**`);

  await page.goto(`${served.url}${pages.find((entry) => entry.name === "consent")?.path}`);
  await page
    .locator('input[name="member_id"]')
    .evaluate((input) => ((input as HTMLInputElement).value = crypto.randomUUID()));
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByRole("heading", { level: 1, name: "This page has expired" }).waitFor();
  await check("page expired");
}

function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
}

/** Opens every disclosure so the checks see the delivery details and chart tables too. */
async function openAllDetails(page: Page): Promise<void> {
  await page.locator("details").evaluateAll((all) => {
    for (const details of all) (details as HTMLDetailsElement).open = true;
  });
}

describe("accessibility", () => {
  it.each(["light", "dark"] as const)(
    "has no serious or critical axe violation on any admin page or the consent page (%s)",
    async (colorScheme) => {
      const page = await adminPage();
      await page.emulateMedia({ colorScheme });
      const confirmations: string[] = [];
      for (const { name, path } of pages) {
        const response = await page.goto(`${served.url}${path}`);
        expect(response?.status(), name).toBe(200);
        await openAllDetails(page);
        expect(await seriousViolations(page), name).toEqual([]);
        if (name === "tokens" || name === "connections") {
          const href = await page.locator('a[href$="/revoke"]').first().getAttribute("href");
          if (href !== null) confirmations.push(href);
        }
      }
      expect(confirmations).toHaveLength(2);
      for (const path of confirmations) {
        await page.goto(`${served.url}${path}`);
        expect(await seriousViolations(page), path).toEqual([]);
      }
      await visitOAuthOutcomes(page, async (name) => {
        expect(await seriousViolations(page), name).toEqual([]);
      });
      // A refused form, with its error beside the field.
      await page.goto(`${served.url}/admin/acme/tokens`);
      await page.getByRole("button", { name: "Mint token" }).click();
      await page.getByRole("alert").waitFor();
      expect(await page.getByRole("group", { name: "Scopes" }).getAttribute("aria-invalid")).toBe(
        "true",
      );
      expect(await seriousViolations(page)).toEqual([]);
    },
  );

  it("lays every page out within 375 px, with no sideways scrolling of the page", async () => {
    const page = await adminPage({ width: 375, height: 800 });
    for (const { name, path } of pages) {
      await page.goto(`${served.url}${path}`);
      await openAllDetails(page);
      expect(await horizontalOverflow(page), name).toBeLessThanOrEqual(0);
    }
    await visitOAuthOutcomes(page, async (name) => {
      expect(await horizontalOverflow(page), name).toBeLessThanOrEqual(0);
    });
  });

  it("works from the keyboard alone, with the focus visible", async () => {
    const page = await adminPage();
    await page.goto(`${served.url}/admin/acme/tokens`);
    // The first Tab reaches the skip link, which becomes visible and moves to the content.
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    expect(
      await page.locator(".skip-link").evaluate((link) => link.getBoundingClientRect().top),
    ).toBeGreaterThanOrEqual(0);

    /** Tabs forward until the focused element matches, checking each one shows its focus. */
    async function tabTo(matches: (label: string) => boolean): Promise<void> {
      for (let presses = 0; presses < 200; presses++) {
        await page.keyboard.press("Tab");
        const focused = await page.evaluate(() => {
          const element = document.activeElement as HTMLElement | null;
          const style = element === null ? null : getComputedStyle(element);
          return {
            label: element?.getAttribute("aria-label") ?? element?.textContent?.trim() ?? "",
            outline: style === null ? "none" : `${style.outlineStyle} ${style.outlineWidth}`,
          };
        });
        expect(focused.outline, focused.label).not.toMatch(/^none|0px$/);
        if (matches(focused.label)) return;
      }
      throw new Error("never reached by Tab");
    }

    await tabTo((label) => label === "Revoke Reporting script");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Revoke this token?" }).waitFor();
    await tabTo((label) => label === "Revoke token");
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "Token revoked." }).waitFor();

    // The delivery details open from the keyboard too.
    await page.goto(`${served.url}${pages.find((entry) => entry.name === "webhook")?.path}`);
    await tabTo((label) => label === "Attempts, payload and headers");
    await page.keyboard.press("Enter");
    expect(
      await page
        .locator("details.delivery-details, tr.delivery-detail details")
        .first()
        .getAttribute("open"),
    ).toBe("");
  });
});
