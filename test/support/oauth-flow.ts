import * as oauth from "oauth4webapi";
import type { Page } from "playwright-core";
import { expect } from "vitest";
import { waitForCallback } from "./browser.js";

/** An addon as a standard client library sees it: its id, how it authenticates, where it returns. */
export type FlowClient = { client: oauth.Client; auth: oauth.ClientAuth; redirectUri: string };

// The test server speaks plain HTTP on 127.0.0.1.
const insecure = { [oauth.allowInsecureRequests]: true };

/** `GET /oauth/authorize` with these parameters, at the discovered endpoint. */
export function authorizationUrl(
  as: oauth.AuthorizationServer,
  params: Record<string, string>,
): string {
  const url = new URL(as.authorization_endpoint as string);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

/** Approves on the consent page and returns the callback URL the browser landed on. */
async function approveOnConsentPage(page: Page, url: string, redirectUri: string): Promise<URL> {
  await page.goto(url);
  expect(await page.getByRole("heading", { level: 1 }).innerText()).toMatch(/^Connect /);
  await page.getByRole("button", { name: "Approve" }).click();
  return waitForCallback(page, redirectUri);
}

/**
 * An admin's approval of a request for `scope` (with a PKCE challenge when given), checked as a
 * client checks it (`state`, `iss`): the callback's parameters, ready to redeem.
 */
export async function authorize(
  page: Page,
  as: oauth.AuthorizationServer,
  flow: FlowClient,
  scope: string,
  codeChallenge?: string,
): Promise<URLSearchParams> {
  const state = oauth.generateRandomState();
  const pkce: Record<string, string> =
    codeChallenge === undefined
      ? {}
      : { code_challenge: codeChallenge, code_challenge_method: "S256" };
  const url = authorizationUrl(as, {
    client_id: flow.client.client_id,
    redirect_uri: flow.redirectUri,
    response_type: "code",
    scope,
    state,
    ...pkce,
  });
  const callback = await approveOnConsentPage(page, url, flow.redirectUri);
  return oauth.validateAuthResponse(as, flow.client, callback, state);
}

/** The token request for an approved code, as sent: its raw response. */
export function redeem(
  as: oauth.AuthorizationServer,
  flow: FlowClient,
  params: URLSearchParams,
  codeVerifier: string | typeof oauth.nopkce = oauth.nopkce,
): Promise<Response> {
  return oauth.authorizationCodeGrantRequest(
    as,
    flow.client,
    flow.auth,
    params,
    flow.redirectUri,
    codeVerifier,
    insecure,
  );
}

/** Approves a request for `scope` and redeems its code: the token response. */
export async function approveAndRedeem(
  page: Page,
  as: oauth.AuthorizationServer,
  flow: FlowClient,
  scope: string,
): Promise<oauth.TokenEndpointResponse> {
  const params = await authorize(page, as, flow, scope);
  return oauth.processAuthorizationCodeResponse(as, flow.client, await redeem(as, flow, params));
}
