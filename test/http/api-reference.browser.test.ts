import type { Browser, BrowserContext, Page, Request, Response } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, type ServedApp, serveTestApp } from "../support/browser.js";
import { importOrganization, mintToken, project } from "../support/fixtures.js";

/**
 * The reference's bundle sends "try it" through its hosted proxy unless the server is on
 * localhost or a `.test`/`.example` name, so the service is served under a name that is neither.
 */
const HOST = "docs.workspace.internal";

const LOADED_MACHINE_MS = 45_000;

let browser: Browser;
let served: ServedApp;
let token: string;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  [browser, served] = await Promise.all([launchBrowser([HOST]), serveTestApp({}, {}, HOST)]);
  // The project the document's examples name, so a write sent as shipped finds it.
  const acme = await importOrganization(served.db, "acme", { projects: [project("picker-arm")] });
  token = await mintToken(served.db, acme);
});
afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
});
afterAll(async () => {
  await browser?.close();
  await served?.close();
});

type Watched = { page: Page; requests: Request[]; violations: string[] };

/** A page whose every request (and every refusal by the CSP) is recorded from the start. */
async function watchedPage(options: { bypassCSP: boolean }): Promise<Watched> {
  const context = await browser.newContext(options);
  contexts.push(context);
  // The page parses a 3.5 MB bundle and the whole document: slow on a loaded two-core machine.
  context.setDefaultTimeout(LOADED_MACHINE_MS);
  const watched: Watched = { page: await context.newPage(), requests: [], violations: [] };
  context.on("request", (request) => watched.requests.push(request));
  watched.page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) watched.violations.push(message.text());
  });
  return watched;
}

function offOrigin(requests: Request[], origin: string): string[] {
  return requests.map((request) => request.url()).filter((url) => new URL(url).origin !== origin);
}

/**
 * Opens the reference, enters the token once, and sends an operation from its "try it" as the
 * page fills it in; `group` is the sidebar group to open first, if the operation is in a closed one.
 */
async function tryOperation(
  page: Page,
  origin: string,
  operation: { summary: string; path: string; group?: string },
): Promise<Response> {
  await page.goto(`${origin}/api/v1/docs`);
  // Preselected: the page offers the bearer token field without choosing a scheme first.
  await page.getByRole("textbox", { name: "Bearer Token" }).fill(token);
  if (operation.group !== undefined)
    await page.getByRole("button", { name: `${operation.group} Open Group` }).click();
  await page.getByRole("button", { name: new RegExp(`^${operation.summary} HTTP Method`) }).click();
  await page
    .locator("section", { has: page.getByRole("heading", { name: operation.summary }) })
    .getByRole("button", { name: /Test Request/ })
    .first()
    .click();
  const answered = page.waitForResponse((response) =>
    new URL(response.url()).pathname.endsWith(operation.path),
  );
  await page.getByRole("button", { name: /^Send .* request to / }).click();
  const response = await answered;
  // Whatever the page loads after the answer (fonts, say) is recorded too.
  await page.waitForLoadState("networkidle");
  return response;
}

const getMe = { summary: "The token's organisation and scopes", path: "/api/v1/me" };

describe("the API reference in Chromium", { timeout: 3 * LOADED_MACHINE_MS }, () => {
  it("answers with a CSP keeping scripts and connections on the origin, and refuses framing", async () => {
    const { page } = await watchedPage({ bypassCSP: false });
    const response = await page.goto(`${served.url}/api/v1/docs`);
    const headers = response?.headers() ?? {};
    const directives = new Map(
      (headers["content-security-policy"] ?? "").split(";").map((directive) => {
        const [name = "", ...values] = directive.trim().split(/\s+/);
        return [name, values.join(" ")];
      }),
    );
    expect(directives.get("connect-src")).toBe("'self'");
    expect(directives.get("script-src")).toBe("'self'");
    expect(directives.get("frame-ancestors")).toBe("'none'");
    expect(directives.get("default-src")).toBe("'none'");
    expect(headers["x-frame-options"]).toBe("DENY");
  });

  // Without the CSP, what the page asks for is the configuration's doing alone; with it, the
  // page must work without anything being refused.
  for (const bypassCSP of [true, false]) {
    it(`sends "try it" straight to the service with the bearer token, and nothing elsewhere (CSP ${bypassCSP ? "bypassed" : "enforced"})`, async () => {
      const { page, requests, violations } = await watchedPage({ bypassCSP });
      const response = await tryOperation(page, served.url, getMe);
      expect(response.status()).toBe(200);
      const sent = response.request();
      expect(await sent.headerValue("authorization")).toBe(`Bearer ${token}`);
      expect(new URL(sent.url()).origin).toBe(served.url);
      expect(offOrigin(requests, served.url)).toEqual([]);
      expect(violations).toEqual([]);
      expect(requests.map((request) => new URL(request.url()).pathname)).toEqual(
        expect.arrayContaining(["/api/v1/docs/js/scalar.js", "/api/v1/openapi.json"]),
      );
    });
  }

  it("sends a write as the page fills it in, and the API accepts it", async () => {
    const { page } = await watchedPage({ bypassCSP: false });
    const response = await tryOperation(page, served.url, {
      summary: "Create a task",
      path: "/api/v1/projects/picker-arm/tasks",
      group: "Tasks",
    });
    expect(response.status(), await response.text()).toBe(200);
    // The example body as the page sent it (the browser hands Playwright no copy of it).
    const tasks = await served.app.inject({
      method: "GET",
      url: "/api/v1/projects/picker-arm/tasks",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(tasks.json().data).toContainEqual(
      expect.objectContaining({
        title: "Order gripper samples",
        priority: "high",
        targetDate: "2026-03-15",
      }),
    );
  });

  it("shows none of the hosted features, even on localhost where the bundle would enable them", async () => {
    const { page, requests } = await watchedPage({ bypassCSP: true });
    const local = served.url.replace(HOST, "127.0.0.1");
    await page.goto(`${local}/api/v1/docs`);
    await page.getByRole("heading", { level: 1, name: "Workspace API" }).waitFor();
    await page.getByRole("button", { name: /^The token's organisation and scopes/ }).click();
    await page
      .getByRole("button", { name: /Test Request/ })
      .first()
      .click();
    await page.getByRole("button", { name: /^Send .* request to / }).waitFor();
    for (const hosted of [
      /Ask AI/i,
      /^Share$/,
      /^Deploy$/,
      /Open API Client/i,
      /Developer Tools/i,
    ]) {
      expect(await page.getByRole("button", { name: hosted }).count()).toBe(0);
      expect(await page.getByRole("link", { name: hosted }).count()).toBe(0);
    }
    expect(await page.getByPlaceholder(/Ask AI/i).count()).toBe(0);
    expect(offOrigin(requests, local)).toEqual([]);
  });
});
