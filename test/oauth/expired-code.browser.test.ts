import { setTimeout as sleep } from "node:timers/promises";
import * as oauth from "oauth4webapi";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type CallbackServer,
  discover,
  launchBrowser,
  type ServedApp,
  serveTestApp,
  signedInContext,
  startCallbackServer,
  waitForCallback,
} from "../support/browser.js";
import { importOAuthWorkspaces, PASSWORD, registerClient } from "./oauth-fixtures.js";

let browser: Browser;
let served: ServedApp;
let addon: CallbackServer;

beforeAll(async () => {
  [browser, served, addon] = await Promise.all([
    launchBrowser(),
    serveTestApp({ OAUTH_CODE_TTL_SECONDS: "1" }),
    startCallbackServer(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await addon?.close();
  await served?.close();
});

it("refuses a code redeemed after OAUTH_CODE_TTL_SECONDS with invalid_grant", async () => {
  const fixtures = await importOAuthWorkspaces(served.db);
  const registered = await registerClient(served.db, fixtures.devco, [`${addon.url}/callback`]);
  const as = await discover(served.url);
  const client: oauth.Client = { client_id: registered.clientId };
  const state = oauth.generateRandomState();
  const { context, page } = await signedInContext(
    browser,
    served.url,
    "admin@acme.example",
    PASSWORD,
  );
  const url = new URL(as.authorization_endpoint as string);
  url.search = new URLSearchParams({
    client_id: registered.clientId,
    redirect_uri: registered.redirectUri,
    response_type: "code",
    scope: "projects:read",
    state,
  }).toString();
  await page.goto(url.href);
  await page.getByRole("button", { name: "Approve" }).click();
  const params = oauth.validateAuthResponse(
    as,
    client,
    await waitForCallback(page, registered.redirectUri),
    state,
  );
  await context.close();

  // Outlive the one-second lifetime (a wait, not a timing assertion).
  await sleep(1500);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.ClientSecretPost(registered.clientSecret as string),
    params,
    registered.redirectUri,
    oauth.nopkce,
    { [oauth.allowInsecureRequests]: true },
  );
  const error = await oauth
    .processAuthorizationCodeResponse(as, client, response)
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(oauth.ResponseBodyError);
  expect((error as oauth.ResponseBodyError).status).toBe(400);
  expect((error as oauth.ResponseBodyError).error).toBe("invalid_grant");
});
