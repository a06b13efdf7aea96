import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  launchBrowser,
  type ServedApp,
  serveTestApp,
  signedInContext,
} from "../support/browser.js";
import { importOAuthWorkspaces, PASSWORD, registerClient } from "./oauth-fixtures.js";

/**
 * A browser addon: a page that runs the whole OAuth flow itself (PKCE, the code redeemed with
 * fetch, the API called with fetch). `/` starts the flow, `/callback` finishes it; the outcome
 * is written into `#outcome` for the test to read.
 */
function addonPage(config: { server: string; clientId: string }): string {
  const script = `
const config = ${JSON.stringify(config)};
const outcome = (text) => { document.getElementById("outcome").textContent = text; };
const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
const redirectUri = location.origin + "/callback";

async function start() {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem("flow", JSON.stringify({ verifier, state }));
  const metadata = await (await fetch(config.server + "/.well-known/oauth-authorization-server")).json();
  const url = new URL(metadata.authorization_endpoint);
  for (const [name, value] of Object.entries({
    response_type: "code", client_id: config.clientId, redirect_uri: redirectUri,
    scope: "tasks:read", state, code_challenge: challenge, code_challenge_method: "S256",
  })) url.searchParams.set(name, value);
  location.assign(url.href);
}

async function finish() {
  const { verifier, state } = JSON.parse(sessionStorage.getItem("flow"));
  const params = new URLSearchParams(location.search);
  if (params.get("state") !== state) throw new Error("state mismatch");
  const issued = await fetch(config.server + "/api/v1/oauth/token", {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "authorization_code", code: params.get("code"), redirect_uri: redirectUri,
      client_id: config.clientId, code_verifier: verifier,
    }),
  });
  const { access_token } = await issued.json();
  const me = await fetch(config.server + "/api/v1/me", {
    headers: { Authorization: "Bearer " + access_token },
  });
  const body = await me.json();
  outcome(JSON.stringify({ status: me.status, remaining: me.headers.get("RateLimit-Remaining"), me: body.data }));
}

async function tryTokenEndpoint() {
  const unauthenticated = await fetch(config.server + "/api/v1/me");
  try {
    await fetch(config.server + "/api/v1/oauth/token", {
      method: "POST",
      body: new URLSearchParams({ grant_type: "authorization_code", code: "x", client_id: config.clientId }),
    });
    outcome("token endpoint answered");
  } catch (error) {
    outcome("api " + unauthenticated.status + ", token endpoint refused: " + error.name);
  }
}

const run = { "/": start, "/callback": finish, "/try": tryTokenEndpoint }[location.pathname];
run().catch((error) => outcome("failed: " + error));
`;
  return `<!doctype html><title>Gantt addon</title><p id="outcome"></p><script>${script}</script>`;
}

/** The addon's server; its client id is known only once its address is registered. */
async function serveAddon(configOf: () => { server: string; clientId: string }): Promise<Server> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(addonPage(configOf()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return server;
}

let browser: Browser;
let served: ServedApp;
let addonServer: Server;
// The same server under two names: the registered origin and one no client registered.
let registeredOrigin: string;
let strangerOrigin: string;

beforeAll(async () => {
  [browser, served] = await Promise.all([launchBrowser(["localhost"]), serveTestApp()]);
  const fixtures = await importOAuthWorkspaces(served.db);
  let clientId = "";
  addonServer = await serveAddon(() => ({ server: served.url, clientId }));
  const { port } = addonServer.address() as AddressInfo;
  registeredOrigin = `http://localhost:${port}`;
  strangerOrigin = `http://127.0.0.1:${port}`;
  const client = await registerClient(served.db, fixtures.devco, [`${registeredOrigin}/callback`], {
    isPublic: true,
    name: "Browser Gantt",
  });
  clientId = client.clientId;
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => addonServer?.close(resolve));
  await served?.close();
});

async function outcomeOf(page: Page): Promise<string> {
  const outcome = page.locator("#outcome");
  await expect.poll(() => outcome.innerText(), { timeout: 15_000 }).not.toBe("");
  return outcome.innerText();
}

describe("an addon running in the browser", () => {
  it("runs PKCE, redeems the code with fetch and calls the API", async () => {
    const { context, page } = await signedInContext(
      browser,
      served.url,
      "admin@acme.example",
      PASSWORD,
    );
    try {
      await page.goto(`${registeredOrigin}/`);
      await page.getByRole("button", { name: "Approve" }).click();
      await page.waitForURL((url) => url.href.startsWith(`${registeredOrigin}/callback`));
      const outcome = JSON.parse(await outcomeOf(page));
      expect(outcome.status).toBe(200);
      expect(outcome.me.scopes).toEqual(["tasks:read"]);
      expect(outcome.me.organization.slug).toBe("acme");
      // Readable only because the header is exposed.
      expect(Number(outcome.remaining)).toBeGreaterThan(0);
    } finally {
      await context.close();
    }
  });

  it("is refused at the token endpoint from an origin no public client registered", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${strangerOrigin}/try`);
      expect(await outcomeOf(page)).toBe("api 401, token endpoint refused: TypeError");
    } finally {
      await context.close();
    }
  });
});
