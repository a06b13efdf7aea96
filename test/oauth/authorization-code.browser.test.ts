import * as oauth from "oauth4webapi";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type AdminBrowser,
  type OAuthWorkspaces,
  startAdminBrowser,
} from "../support/admin-browser.js";
import { api } from "../support/api.js";
import {
  type CallbackServer,
  discover,
  fillSignIn,
  type ServedApp,
  startCallbackServer,
  submitForNotice,
  waitForCallback,
} from "../support/browser.js";
import {
  approveAndRedeem,
  authorize,
  type FlowClient,
  authorizationUrl as flowAuthorizationUrl,
  redeem,
} from "../support/oauth-flow.js";
import { PASSWORD, registerClient } from "./oauth-fixtures.js";

let admin: AdminBrowser;
let served: ServedApp;
let addon: CallbackServer;
let as: oauth.AuthorizationServer;
let fixtures: OAuthWorkspaces;
let confidential: Awaited<ReturnType<typeof registerClient>>;
let publicClient: Awaited<ReturnType<typeof registerClient>>;

const SCOPES = "projects:read tasks:read";

beforeAll(async () => {
  [admin, addon] = await Promise.all([startAdminBrowser(), startCallbackServer()]);
  ({ served, workspaces: fixtures } = admin);
  confidential = await registerClient(served.db, fixtures.devco, [`${addon.url}/callback`]);
  publicClient = await registerClient(served.db, fixtures.devco, [`${addon.url}/native`], {
    isPublic: true,
    name: "Desktop Addon",
  });
  as = await discover(served.url);
});
afterEach(() => admin.closePages());
afterAll(async () => {
  await admin?.close();
  await addon?.close();
});

const adminPage = (email?: string) => admin.pageAs(email);

/** The confidential addon authenticating with its secret, by HTTP Basic unless told. */
function confidentialFlow(auth?: oauth.ClientAuth): FlowClient {
  return {
    client: { client_id: confidential.clientId },
    auth: auth ?? oauth.ClientSecretBasic(confidential.clientSecret as string),
    redirectUri: confidential.redirectUri,
  };
}

const authorizationUrl = (params: Record<string, string>) => flowAuthorizationUrl(as, params);

describe("the authorization-code flow in a browser", () => {
  it("signs a signed-out admin in, approves, and client_secret_basic redeems the code", async () => {
    const page = await admin.anonymousPage();
    const client: oauth.Client = { client_id: confidential.clientId };
    const state = oauth.generateRandomState();
    const redirectUri = confidential.redirectUri;
    await page.goto(
      authorizationUrl({
        client_id: client.client_id,
        redirect_uri: redirectUri,
        response_type: "code",
        scope: SCOPES,
        state,
      }),
    );
    // Signed out: the sign-in page first, then back to the same authorization request.
    expect(new URL(page.url()).pathname).toBe("/login");
    await fillSignIn(page, "admin@acme.example", PASSWORD);
    await page.getByRole("heading", { level: 1, name: "Connect Gantt Addon" }).waitFor();
    const main = await page.locator("main").innerText();
    expect(main).toContain(fixtures.devco.organization.name);
    expect(main).toContain(fixtures.acme.organization.name);
    expect(main).toContain("Read projects");
    expect(main).toContain("Read tasks");
    await page.getByRole("button", { name: "Approve" }).click();
    const callback = await waitForCallback(page, redirectUri);

    const params = oauth.validateAuthResponse(as, client, callback, state);
    expect(params.get("code")).toMatch(/^svca_/);
    const response = await redeem(as, confidentialFlow(), params);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.scope).toBe(SCOPES);

    const me = await api(served.app, "GET", "/api/v1/me", { token: tokens.access_token });
    expect(me.body.data.pluginId).toBe(confidential.id);
    expect(me.body.data.organization.slug).toBe(fixtures.acme.organization.slug);
    const tasks = await api(served.app, "GET", "/api/v1/projects/rover/tasks", {
      token: tokens.access_token,
    });
    expect(tasks.status).toBe(200);
    const pages = await api(served.app, "GET", "/api/v1/projects/rover/pages", {
      token: tokens.access_token,
    });
    expect(pages.status).toBe(403);
  });

  it("redeems with client_secret_post", async () => {
    const flow = confidentialFlow(oauth.ClientSecretPost(confidential.clientSecret as string));
    const tokens = await approveAndRedeem(await adminPage(), as, flow, "projects:read");
    expect(tokens.scope).toBe("projects:read");
    const projects = await api(served.app, "GET", "/api/v1/projects", {
      token: tokens.access_token,
    });
    expect(projects.status).toBe(200);
  });

  it("lets a public client redeem with PKCE, and refuses a wrong verifier", async () => {
    const page = await adminPage();
    const flow: FlowClient = {
      client: { client_id: publicClient.clientId, token_endpoint_auth_method: "none" },
      auth: oauth.None(),
      redirectUri: publicClient.redirectUri,
    };
    const verifier = oauth.generateRandomCodeVerifier();
    const challenge = await oauth.calculatePKCECodeChallenge(verifier);
    const approveAndRedeemWith = async (codeVerifier: string) => {
      const params = await authorize(page, as, flow, "meetings:read", challenge);
      const response = await redeem(as, flow, params, codeVerifier);
      return oauth.processAuthorizationCodeResponse(as, flow.client, response);
    };
    const tokens = await approveAndRedeemWith(verifier);
    const me = await api(served.app, "GET", "/api/v1/me", { token: tokens.access_token });
    expect(me.body.data.scopes).toEqual(["meetings:read"]);
    expect(me.body.data.pluginId).toBe(publicClient.id);

    const refused = await approveAndRedeemWith(oauth.generateRandomCodeVerifier()).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(oauth.ResponseBodyError);
    expect((refused as oauth.ResponseBodyError).error).toBe("invalid_grant");
  });

  it("refuses plain PKCE with a redirect carrying invalid_request", async () => {
    const page = await adminPage();
    const state = oauth.generateRandomState();
    await page.goto(
      authorizationUrl({
        client_id: publicClient.clientId,
        redirect_uri: publicClient.redirectUri,
        response_type: "code",
        scope: "projects:read",
        state,
        code_challenge: oauth.generateRandomCodeVerifier(),
        code_challenge_method: "plain",
      }),
    );
    const callback = await waitForCallback(page, publicClient.redirectUri);
    expect(callback.searchParams.get("error")).toBe("invalid_request");
    expect(callback.searchParams.get("state")).toBe(state);
    expect(callback.searchParams.get("code")).toBeNull();
  });

  it("sends a denial back with access_denied, the same state and iss", async () => {
    const page = await adminPage();
    const client: oauth.Client = { client_id: confidential.clientId };
    const state = oauth.generateRandomState();
    await page.goto(
      authorizationUrl({
        client_id: client.client_id,
        redirect_uri: confidential.redirectUri,
        response_type: "code",
        scope: SCOPES,
        state,
      }),
    );
    await page.getByRole("button", { name: "Deny" }).click();
    const callback = await waitForCallback(page, confidential.redirectUri);
    expect(callback.searchParams.get("error")).toBe("access_denied");
    expect(callback.searchParams.get("state")).toBe(state);
    expect(callback.searchParams.get("iss")).toBe(served.url);
    expect(() => oauth.validateAuthResponse(as, client, callback, state)).toThrow(
      oauth.AuthorizationResponseError,
    );
  });

  it("does not let a member who is not an admin approve", async () => {
    const page = await adminPage("member@acme.example");
    const response = await page.goto(
      authorizationUrl({
        client_id: confidential.clientId,
        redirect_uri: confidential.redirectUri,
        response_type: "code",
        scope: SCOPES,
        state: "s",
      }),
    );
    expect(response?.status()).toBe(403);
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe(
      "An admin must approve this addon",
    );
    expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0);
  });

  it("revokes the first token when a code is used twice", async () => {
    const flow = confidentialFlow();
    const params = await authorize(await adminPage(), as, flow, "projects:read");
    const redeemOnce = async () =>
      oauth.processAuthorizationCodeResponse(as, flow.client, await redeem(as, flow, params));
    const first = await redeemOnce();
    expect((await api(served.app, "GET", "/api/v1/me", { token: first.access_token })).status).toBe(
      200,
    );
    const second = await redeemOnce().catch((error: unknown) => error);
    expect((second as oauth.ResponseBodyError).error).toBe("invalid_grant");
    expect((await api(served.app, "GET", "/api/v1/me", { token: first.access_token })).status).toBe(
      401,
    );
  });

  it("refuses a wrong client secret with invalid_client (401)", async () => {
    const params = await authorize(await adminPage(), as, confidentialFlow(), "projects:read");
    const wrong = confidentialFlow(oauth.ClientSecretBasic("svcs_not-the-secret"));
    const response = await redeem(as, wrong, params);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Basic/);
    expect(((await response.clone().json()) as { error: string }).error).toBe("invalid_client");
    // A standard client surfaces the Basic challenge of the 401.
    const error = await oauth
      .processAuthorizationCodeResponse(as, wrong.client, response)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
  });

  it("shows an error page and never redirects for a redirect_uri mismatch or an unknown client", async () => {
    const page = await adminPage();
    const visited: string[] = [];
    page.on("request", (request) => visited.push(request.url()));
    for (const params of [
      { client_id: confidential.clientId, redirect_uri: `${addon.url}/elsewhere` },
      { client_id: confidential.clientId, redirect_uri: `${confidential.redirectUri}/` },
      { client_id: "svcc_not-registered", redirect_uri: confidential.redirectUri },
    ]) {
      const response = await page.goto(
        authorizationUrl({ ...params, response_type: "code", scope: "projects:read", state: "s" }),
      );
      expect(response?.status()).toBe(400);
      expect(new URL(page.url()).origin).toBe(served.url);
      expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe(
        "This connection request cannot be used",
      );
    }
    expect(visited.filter((url) => url.startsWith(addon.url))).toEqual([]);
  });

  it("refuses a consent form posted without its CSRF token, offering the request again", async () => {
    const page = await adminPage();
    await page.goto(
      authorizationUrl({
        client_id: confidential.clientId,
        redirect_uri: confidential.redirectUri,
        response_type: "code",
        scope: "projects:read",
        state: "s",
      }),
    );
    await page.locator('input[name="_csrf"]').evaluateAll((inputs) => {
      for (const input of inputs) input.remove();
    });
    const [response] = await Promise.all([
      page.waitForResponse((candidate) => candidate.request().method() === "POST"),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    expect(response.status()).toBe(403);
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("This page has expired");
    expect(page.url().startsWith(addon.url)).toBe(false);
    await page.getByRole("link", { name: "Review the request again" }).click();
    await page.getByRole("heading", { level: 1, name: "Connect Gantt Addon" }).waitFor();
  });

  it("gives 401 to the tokens of a grant once an admin disconnects the addon", async () => {
    const page = await adminPage();
    const tokens = await approveAndRedeem(page, as, confidentialFlow(), "projects:read");
    expect(
      (await api(served.app, "GET", "/api/v1/projects", { token: tokens.access_token })).status,
    ).toBe(200);

    await page.goto(`${served.url}/admin/${fixtures.acme.organization.slug}/connections`);
    // Disconnecting asks first, on a page of its own that says what stops working.
    await page.getByRole("link", { name: "Disconnect Gantt Addon" }).click();
    await page.getByRole("heading", { level: 1, name: "Disconnect Gantt Addon?" }).waitFor();
    expect(await page.locator("main").innerText()).toContain(
      "Every token of this addon stops working at once",
    );
    await submitForNotice(
      page,
      page.getByRole("button", { name: "Disconnect Gantt Addon" }),
      /every token it was issued is revoked/,
    );
    const after = await api(served.app, "GET", "/api/v1/projects", { token: tokens.access_token });
    expect(after.status).toBe(401);
    expect(after.body.error).toBe("invalid_token");
  });
});
