import { sql } from "drizzle-orm";
import * as oauth from "oauth4webapi";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/client.js";
import {
  type CallbackServer,
  discover,
  launchBrowser,
  type ServedApp,
  serveTestApp,
  signedInContext,
  startCallbackServer,
} from "../support/browser.js";
import { authorize, type FlowClient, redeem } from "../support/oauth-flow.js";
import { importOAuthWorkspaces, PASSWORD, registerClient } from "./oauth-fixtures.js";

let browser: Browser;
let served: ServedApp;
let addon: CallbackServer;
const CODE_TTL_SECONDS = 90;

beforeAll(async () => {
  [browser, served, addon] = await Promise.all([
    launchBrowser(),
    serveTestApp({ OAUTH_CODE_TTL_SECONDS: String(CODE_TTL_SECONDS) }),
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
  const flow: FlowClient = {
    client: { client_id: registered.clientId },
    auth: oauth.ClientSecretPost(registered.clientSecret as string),
    redirectUri: registered.redirectUri,
  };
  const { context, page } = await signedInContext(
    browser,
    served.url,
    "admin@acme.example",
    PASSWORD,
  );
  const params = await authorize(page, as, flow, "projects:read");
  await context.close();

  // The code lives OAUTH_CODE_TTL_SECONDS; its expiry is then moved to the past rather than
  // waited for.
  const [code] = rowsOf<{ lifetime: number }>(
    await served.db.execute(sql`
      select extract(epoch from expires_at - created_at)::float as lifetime from oauth_codes`),
  );
  expect(code?.lifetime).toBeGreaterThan(CODE_TTL_SECONDS - 5);
  expect(code?.lifetime).toBeLessThan(CODE_TTL_SECONDS + 5);
  await served.db.execute(sql`update oauth_codes set expires_at = now() - interval '1 second'`);
  const response = await redeem(as, flow, params);
  const error = await oauth
    .processAuthorizationCodeResponse(as, flow.client, response)
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(oauth.ResponseBodyError);
  expect((error as oauth.ResponseBodyError).status).toBe(400);
  expect((error as oauth.ResponseBodyError).error).toBe("invalid_grant");
});
