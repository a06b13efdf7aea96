import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import type * as oauth from "oauth4webapi";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AdminBrowser, startAdminBrowser } from "../support/admin-browser.js";
import {
  type CallbackServer,
  discover,
  fillSignIn,
  type ServedApp,
  startCallbackServer,
  waitForCallback,
} from "../support/browser.js";
import { authorizationUrl } from "../support/oauth-flow.js";
import { PASSWORD, registerClient } from "./oauth-fixtures.js";

// Every redirect chain that starts with one of our forms, in Chromium: its CSP `form-action`
// covers the whole chain, so none may end off this site by a redirect.

let admin: AdminBrowser;
let served: ServedApp;
let addon: CallbackServer;
let onward: { url: string; server: Server };
let as: oauth.AuthorizationServer;
let direct: Awaited<ReturnType<typeof registerClient>>;
let redirecting: Awaited<ReturnType<typeof registerClient>>;

/** The addon's callback that redirects onward to another origin, as many addons do. */
async function startOnwardCallback(target: string): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    const query = new URL(request.url ?? "/", "http://callback").search;
    response.writeHead(302, { location: `${target}/app${query}` });
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  // localhost, not 127.0.0.1: another origin than the addon's app.
  return { url: `http://localhost:${(server.address() as AddressInfo).port}`, server };
}

beforeAll(async () => {
  [admin, addon] = await Promise.all([startAdminBrowser(), startCallbackServer()]);
  served = admin.served;
  onward = await startOnwardCallback(addon.url);
  const fixtures = admin.workspaces;
  direct = await registerClient(served.db, fixtures.devco, [`${addon.url}/callback`]);
  redirecting = await registerClient(served.db, fixtures.devco, [`${onward.url}/cb`], {
    name: "Onward Addon",
  });
  as = await discover(served.url);
});
afterEach(() => admin.closePages());
afterAll(async () => {
  await admin?.close();
  await addon?.close();
  await new Promise<void>((resolve) => (onward ? onward.server.close(() => resolve()) : resolve()));
});

const freshPage = () => admin.anonymousPage();

function request(client: { clientId: string; redirectUri: string }, extra = {}) {
  return authorizationUrl(as, {
    client_id: client.clientId,
    redirect_uri: client.redirectUri,
    response_type: "code",
    scope: "projects:read",
    state: "st-1",
    ...extra,
  });
}

/** Opens the request signed out and signs in from the page it leads to. */
async function signInThrough(page: Page, url: string, email = "admin@acme.example") {
  await page.goto(url);
  expect(new URL(page.url()).pathname).toBe("/login");
  await fillSignIn(page, email, PASSWORD);
}

describe("redirect chains that start with a form, in Chromium", () => {
  it("sign-in → consent", async () => {
    const page = await freshPage();
    await signInThrough(page, request(direct));
    await page.getByRole("heading", { level: 1, name: "Connect Gantt Addon" }).waitFor();
  });

  it("sign-in → an error sent back to the addon", async () => {
    const page = await freshPage();
    await signInThrough(page, request(direct, { state: "" }));
    const callback = await waitForCallback(page, direct.redirectUri);
    expect(callback.searchParams.get("error")).toBe("invalid_request");
    expect(callback.searchParams.get("iss")).toBe(served.url);
  });

  it("sign-in → the needs-admin page → return to the addon", async () => {
    const page = await freshPage();
    await signInThrough(page, request(direct), "member@acme.example");
    await page
      .getByRole("heading", { level: 1, name: "An admin must approve this addon" })
      .waitFor();
    await page.getByRole("button", { name: "Return to the addon" }).click();
    const callback = await waitForCallback(page, direct.redirectUri);
    expect(callback.searchParams.get("error")).toBe("access_denied");
  });

  for (const decision of ["Approve", "Deny"] as const) {
    it(`${decision} reaches the addon`, async () => {
      const page = await freshPage();
      await signInThrough(page, request(direct));
      await page.getByRole("button", { name: decision }).click();
      const callback = await waitForCallback(page, direct.redirectUri);
      expect(callback.searchParams.get("state")).toBe("st-1");
      if (decision === "Approve") expect(callback.searchParams.get("code")).toMatch(/^svca_/);
      else expect(callback.searchParams.get("error")).toBe("access_denied");
    });

    it(`${decision} reaches the addon when its callback redirects onward to another origin`, async () => {
      const page = await freshPage();
      await signInThrough(page, request(redirecting));
      await page.getByRole("button", { name: decision }).click();
      const landed = await waitForCallback(page, `${addon.url}/app`);
      expect(landed.searchParams.get(decision === "Approve" ? "code" : "error")).not.toBeNull();
    });
  }

  it("the needs-admin page's return reaches an addon whose callback redirects onward", async () => {
    const page = await freshPage();
    await signInThrough(page, request(redirecting), "member@acme.example");
    await page.getByRole("button", { name: "Return to the addon" }).click();
    const landed = await waitForCallback(page, `${addon.url}/app`);
    expect(landed.searchParams.get("error")).toBe("access_denied");
  });

  it("sign-out lands on the sign-in page", async () => {
    const page = await freshPage();
    await signInThrough(page, request(direct));
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/login");
  });

  it("a session that expires before the decision signs in again and shows the request", async () => {
    const page = await freshPage();
    await signInThrough(page, request(direct));
    await page.getByRole("button", { name: "Approve" }).waitFor();
    await served.db.execute(sql`update sessions set expires_at = now() - interval '1 second'`);
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await fillSignIn(page, "admin@acme.example", PASSWORD);
    await page.getByRole("heading", { level: 1, name: "Connect Gantt Addon" }).waitFor();
    await page.getByRole("button", { name: "Approve" }).click();
    const callback = await waitForCallback(page, direct.redirectUri);
    expect(callback.searchParams.get("code")).toMatch(/^svca_/);
  });

  it("a consent form from before another member signed in decides nothing for the first", async () => {
    const context = await admin.newContext();
    const consent = await context.newPage();
    await signInThrough(consent, request(direct));
    await consent.getByRole("button", { name: "Approve" }).waitFor();
    const other = await context.newPage();
    await other.goto(`${served.url}/admin`);
    await other.getByRole("button", { name: "Sign out" }).click();
    await other.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await fillSignIn(other, "member@acme.example", PASSWORD);
    await other.waitForURL((url) => !url.pathname.startsWith("/login"));

    // Approving would speak for the member signed in now, who never saw the page.
    await consent.getByRole("button", { name: "Approve" }).click();
    await consent.getByRole("heading", { level: 1, name: "This page has expired" }).waitFor();
    await consent.getByRole("link", { name: "Review the request again" }).click();
    await consent
      .getByRole("heading", { level: 1, name: "An admin must approve this addon" })
      .waitFor();
    await consent.getByRole("button", { name: "Return to the addon" }).click();
    const callback = await waitForCallback(consent, direct.redirectUri);
    expect(callback.searchParams.get("error")).toBe("access_denied");
  });

  it("a consent form whose security token is gone offers the same request again", async () => {
    const context = await admin.newContext();
    const page = await context.newPage();
    await signInThrough(page, request(direct));
    await page.getByRole("button", { name: "Approve" }).waitFor();
    await context.clearCookies();
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByRole("heading", { level: 1, name: "This page has expired" }).waitFor();
    await page.getByRole("link", { name: "Review the request again" }).click();
    await fillSignIn(page, "admin@acme.example", PASSWORD);
    await page.getByRole("button", { name: "Approve" }).click();
    const callback = await waitForCallback(page, direct.redirectUri);
    expect(callback.searchParams.get("code")).toMatch(/^svca_/);
    expect(callback.searchParams.get("state")).toBe("st-1");
  });
});
