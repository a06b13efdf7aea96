import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import * as oauth from "oauth4webapi";
import {
  type Browser,
  type BrowserContext,
  chromium,
  type Locator,
  type Page,
} from "playwright-core";
import { expect } from "vitest";
import { createTestApp, type TestApp } from "./app.js";
import { freePort } from "./ports.js";

/**
 * Debian's chromium-headless-shell (`.ci/run` installs it); no browser is downloaded. It is the
 * headless build Playwright itself runs for `headless: true`, much lighter on a two-core machine
 * than the full browser in headless mode.
 */
const CHROMIUM_PATH = "/usr/lib/chromium/chromium-headless-shell";

/**
 * One headless Chromium per test file; contexts (one per test) keep cookies apart. `hostAliases`
 * resolve to 127.0.0.1, for a page that must be served under a name other than localhost's.
 */
export function launchBrowser(hostAliases: readonly string[] = []): Promise<Browser> {
  const rules = hostAliases.map((host) => `MAP ${host} 127.0.0.1`).join(", ");
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      ...(rules === "" ? [] : [`--host-resolver-rules=${rules}`]),
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

async function listenOnFreePort(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export type ServedApp = TestApp & { url: string };

/**
 * The real app on a real port, with PUBLIC_URL equal to the address the browser uses, so the
 * issuer, the metadata and the `iss` on redirects all match. A `hostname` other than 127.0.0.1
 * must be one of the browser's `hostAliases`.
 */
export async function serveTestApp(
  env: Record<string, string> = {},
  options: Parameters<typeof createTestApp>[1] = {},
  hostname = "127.0.0.1",
): Promise<ServedApp> {
  const port = await freePort();
  const url = `http://${hostname}:${port}`;
  const testApp = await createTestApp({ PUBLIC_URL: url, ...env }, options);
  await testApp.app.listen({ port, host: "127.0.0.1" });
  return { ...testApp, url };
}

export type CallbackServer = { url: string; close(): Promise<void> };

/** The addon's side: a real local server that answers its redirect URI with a small page. */
export async function startCallbackServer(): Promise<CallbackServer> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!doctype html><title>Addon</title><h1>Addon callback</h1>");
  });
  const port = await listenOnFreePort(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Fills in the sign-in form the way a member does. */
export async function fillSignIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/**
 * Clicks a form's submit button and waits for the page the POST lands on, recognised by its
 * one-line notice. Reading the page, or reloading it, before that page has loaded races the
 * navigation the click started.
 */
export async function submitForNotice(
  page: Page,
  button: Locator,
  notice: string | RegExp,
): Promise<string> {
  await button.click();
  const shown = page.getByRole("status").filter({ hasText: notice });
  await shown.waitFor();
  return shown.innerText();
}

/** Clicks a form's submit button and waits for the page whose main heading is `heading`. */
export async function submitForHeading(
  page: Page,
  button: Locator,
  heading: string | RegExp,
): Promise<void> {
  await button.click();
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

/** A fresh browser context signed in as the member. */
export async function signedInContext(
  browser: Browser,
  baseUrl: string,
  email: string,
  password: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${baseUrl}/login`);
  await fillSignIn(page, email, password);
  await page.waitForURL((url) => !url.pathname.startsWith("/login"));
  return { context, page };
}

/** The authorization server as oauth4webapi discovers it from the metadata document. */
export async function discover(baseUrl: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(baseUrl);
  const response = await oauth.discoveryRequest(issuer, {
    algorithm: "oauth2",
    [oauth.allowInsecureRequests]: true,
  });
  return oauth.processDiscoveryResponse(issuer, response);
}

/** Follows the consent redirect to the addon's callback and returns the URL it landed on. */
export async function waitForCallback(page: Page, callbackUrl: string): Promise<URL> {
  await page.waitForURL((url) => url.href.startsWith(callbackUrl));
  return new URL(page.url());
}

type CookieJar = Map<string, string>;

function storeCookies(jar: CookieJar, setCookie: string | string[] | undefined): void {
  const headers = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie];
  for (const header of headers) {
    const [pair] = header.split(";");
    const separator = pair?.indexOf("=") ?? -1;
    if (pair === undefined || separator < 0) continue;
    jar.set(pair.slice(0, separator), pair.slice(separator + 1));
  }
}

/**
 * A cookie-keeping client over `app.inject` for fast page-level tests: what a browser keeps
 * between requests, without the browser.
 */
export class InjectSession {
  readonly cookies: CookieJar = new Map();

  constructor(
    private readonly app: FastifyInstance,
    private readonly remoteAddress = "127.0.0.1",
  ) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  async get(url: string, headers: Record<string, string> = {}) {
    const response = await this.app.inject({
      method: "GET",
      url,
      headers: { cookie: this.cookieHeader(), ...headers },
      remoteAddress: this.remoteAddress,
    });
    storeCookies(this.cookies, response.headers["set-cookie"]);
    return response;
  }

  async post(
    url: string,
    form: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ) {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(form)) {
      for (const entry of Array.isArray(value) ? value : [value]) body.append(name, entry);
    }
    const response = await this.app.inject({
      method: "POST",
      url,
      headers: {
        cookie: this.cookieHeader(),
        "content-type": "application/x-www-form-urlencoded",
        ...headers,
      },
      payload: body.toString(),
      remoteAddress: this.remoteAddress,
    });
    storeCookies(this.cookies, response.headers["set-cookie"]);
    return response;
  }

  /** GETs a page and returns the CSRF token of its (first) form. */
  async csrfTokenOf(url: string): Promise<string> {
    const page = await this.get(url);
    const token = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
    if (token === undefined) throw new Error(`${url} (${page.statusCode}) has no CSRF token`);
    return token;
  }

  async signIn(email: string, password: string) {
    const _csrf = await this.csrfTokenOf("/login");
    const response = await this.post("/login", { _csrf, email, password });
    expect(response.statusCode, response.body).toBe(303);
    return response;
  }
}
