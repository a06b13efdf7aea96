import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allScopes } from "../../src/core/scopes.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { addUser, removeMember } from "../../src/modules/users/service.js";
import { listGrantsConnectedTo } from "../../src/oauth/grants.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import {
  addonReturnUrl,
  importOAuthWorkspaces,
  memberIdOf,
  PASSWORD,
  pkcePair,
  registerClient,
} from "./oauth-fixtures.js";

const PUBLIC_URL = "http://workspace.example";
const REDIRECT = "https://addon.example/callback?tenant=7";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let confidential: Awaited<ReturnType<typeof registerClient>>;
let publicClient: Awaited<ReturnType<typeof registerClient>>;

beforeAll(async () => {
  t = await createTestApp({ PUBLIC_URL });
  fixtures = await importOAuthWorkspaces(t.db);
  confidential = await registerClient(t.db, fixtures.devco, [REDIRECT]);
  publicClient = await registerClient(t.db, fixtures.devco, ["http://localhost:7777/cb"], {
    isPublic: true,
  });
});
afterAll(() => t.close());

function authorizeUrl(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) query.append(name, value);
  return `/oauth/authorize?${query.toString()}`;
}

function validParams(overrides: Record<string, string | undefined> = {}) {
  return {
    client_id: confidential.clientId,
    redirect_uri: REDIRECT,
    response_type: "code",
    scope: "projects:read tasks:write",
    state: "st-123",
    ...overrides,
  };
}

describe("authorization server metadata (RFC 8414)", () => {
  it("describes the endpoints, scopes and methods", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/.well-known/oauth-authorization-server",
    });
    expect(res.statusCode).toBe(200);
    const metadata = res.json();
    expect(metadata).toMatchObject({
      issuer: PUBLIC_URL,
      authorization_endpoint: `${PUBLIC_URL}/oauth/authorize`,
      token_endpoint: `${PUBLIC_URL}/api/v1/oauth/token`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      authorization_response_iss_parameter_supported: true,
    });
    expect(metadata.scopes_supported).toEqual(allScopes);
    expect(metadata.scopes_supported).toHaveLength(13);
  });
});

describe("requests that cannot be trusted show an error page and never redirect", () => {
  it.each([
    ["an unknown client_id", { client_id: "svcc_unknown" }],
    ["no client_id", { client_id: undefined }],
    ["a redirect_uri that was not registered", { redirect_uri: "https://evil.example/callback" }],
    ["a redirect_uri extending a registered one", { redirect_uri: `${REDIRECT}&x=1` }],
    [
      "a redirect_uri that is a prefix of a registered one",
      { redirect_uri: "https://addon.example/callback" },
    ],
    ["no redirect_uri", { redirect_uri: undefined }],
  ])("%s", async (_name, overrides) => {
    const res = await t.app.inject({ method: "GET", url: authorizeUrl(validParams(overrides)) });
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers["content-type"]).toMatch(/text\/html/);
    expect(res.body).toContain("This connection request cannot be used");
  });

  it("a repeated client_id", async () => {
    const url = `${authorizeUrl(validParams())}&client_id=${confidential.clientId}`;
    const res = await t.app.inject({ method: "GET", url });
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });
});

describe("other errors go back to the client, with state and iss, once signed in", () => {
  let admin: InjectSession;
  beforeAll(async () => {
    admin = new InjectSession(t.app);
    await admin.signIn("admin@acme.example", PASSWORD);
  });

  it("sends a signed-out visitor to sign in first, never to the client (no open redirect)", async () => {
    for (const overrides of [
      { scope: "bogus" },
      { response_type: "token" },
      { state: undefined },
    ]) {
      const url = authorizeUrl(validParams(overrides));
      const res = await t.app.inject({ method: "GET", url });
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`/login?return_to=${encodeURIComponent(url)}`);
    }
  });

  it.each([
    [
      "a response_type other than code",
      { response_type: "token" },
      "unsupported_response_type",
      "st-123",
    ],
    ["no response_type", { response_type: undefined }, "unsupported_response_type", "st-123"],
    ["an unknown scope", { scope: "projects:read admin:everything" }, "invalid_scope", "st-123"],
    ["no scope", { scope: undefined }, "invalid_scope", "st-123"],
    ["no state", { state: undefined }, "invalid_request", null],
    [
      "plain PKCE",
      { code_challenge: pkcePair().verifier, code_challenge_method: "plain" },
      "invalid_request",
      "st-123",
    ],
    [
      "a challenge without method (plain)",
      { code_challenge: pkcePair().challenge },
      "invalid_request",
      "st-123",
    ],
  ])("%s", async (_name, overrides, error, state) => {
    const res = await admin.get(authorizeUrl(validParams(overrides)));
    expect(res.headers.location).toBeUndefined();
    const location = addonReturnUrl(res);
    expect(`${location.origin}${location.pathname}`).toBe("https://addon.example/callback");
    // The registered URI's own query is kept.
    expect(location.searchParams.get("tenant")).toBe("7");
    expect(location.searchParams.get("error")).toBe(error);
    expect(location.searchParams.get("state")).toBe(state);
    expect(location.searchParams.get("iss")).toBe(PUBLIC_URL);
    expect(location.searchParams.get("code")).toBeNull();
  });

  it("a public client without PKCE", async () => {
    const res = await admin.get(
      authorizeUrl(
        validParams({ client_id: publicClient.clientId, redirect_uri: publicClient.redirectUri }),
      ),
    );
    expect(addonReturnUrl(res).searchParams.get("error")).toBe("invalid_request");
  });

  it("a repeated scope parameter", async () => {
    const res = await admin.get(`${authorizeUrl(validParams())}&scope=pages:read`);
    expect(addonReturnUrl(res).searchParams.get("error")).toBe("invalid_request");
  });
});

describe("a valid request", () => {
  it("sends a signed-out visitor to sign in, keeping the whole request", async () => {
    const url = authorizeUrl(validParams());
    const res = await t.app.inject({ method: "GET", url });
    expect(res.statusCode).toBe(303);
    const location = new URL(res.headers.location as string, PUBLIC_URL);
    expect(location.pathname).toBe("/login");
    expect(location.searchParams.get("return_to")).toBe(url);
  });

  it("shows an admin the consent page, unframeable, with no referrer and no CORS", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const res = await session.get(authorizeUrl(validParams()), { origin: "https://addon.example" });
    expect(res.statusCode).toBe(200);
    const csp = String(res.headers["content-security-policy"]);
    expect(csp).toContain("frame-ancestors 'none'");
    // The way back to the addon is a page of ours, so forms post and redirect only here.
    expect(csp).toContain("form-action 'self';");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.headers["referrer-policy"]).toBe("no-referrer");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(res.body).toContain("Gantt Addon");
    expect(res.body).toContain(fixtures.devco.organization.name);
    expect(res.body).toContain(fixtures.acme.organization.name);
    expect(res.body).toContain("Read projects");
    expect(res.body).toContain("Create and update tasks");
    expect(res.body).toMatch(/<button[^>]*value="approve"[^>]*>Approve<\/button>/);
    expect(res.body).toMatch(/<button[^>]*value="deny"[^>]*>Deny<\/button>/);
  });

  it("escapes what the addon controls", async () => {
    const sneaky = await registerClient(t.db, fixtures.devco, [REDIRECT], {
      name: '<script>alert("x")</script>',
    });
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const res = await session.get(
      authorizeUrl(validParams({ client_id: sneaky.clientId, state: '"><img src=x>' })),
    );
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain("<script>");
    expect(res.body).not.toContain("<img");
    expect(res.body).toContain("&lt;script&gt;");
  });

  it("asks again on every request: approving once does not approve the next", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const url = authorizeUrl(validParams());
    const page = await session.get(url);
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const organizationId = /name="organization_id" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const approved = await session.post("/oauth/authorize", {
      ...validParams(),
      _csrf,
      member_id: memberIdOf(page.body),
      organization_id: organizationId,
      decision: "approve",
    });
    expect(addonReturnUrl(approved).searchParams.get("code")).toMatch(/^svca_/);
    const again = await session.get(url);
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain(">Approve</button>");
  });

  it("lets an admin of several organisations choose the one to connect", async () => {
    await addUser(t.db, systemAudit, {
      orgSlug: fixtures.devco.organization.slug,
      email: "admin@acme.example",
      name: "Ada Admin",
      role: "admin",
    });
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const page = await session.get(authorizeUrl(validParams()));
    expect(page.body).toContain("<legend>Organisation to connect</legend>");
    expect(page.body).toMatch(/type="radio"[^>]*name="organization_id"/);
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const approved = await session.post("/oauth/authorize", {
      ...validParams(),
      _csrf,
      member_id: memberIdOf(page.body),
      organization_id: fixtures.devco.organization.id,
      decision: "approve",
    });
    expect(addonReturnUrl(approved).searchParams.get("code")).toMatch(/^svca_/);
    const grants = await listGrantsConnectedTo(t.db, fixtures.devco.organization.id);
    expect(grants.map((grant) => grant.clientId)).toEqual([confidential.clientId]);
    await removeMember(t.db, systemAudit, {
      orgSlug: fixtures.devco.organization.slug,
      email: "admin@acme.example",
    });
  });

  it("refuses an approval from a page shown to another member, offering the request again", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const page = await session.get(authorizeUrl(validParams()));
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const organizationId = /name="organization_id" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const res = await session.post("/oauth/authorize", {
      ...validParams(),
      _csrf,
      member_id: "someone-else",
      organization_id: organizationId,
      decision: "approve",
    });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("This page has expired");
    expect(res.body).not.toContain("svca_");
  });

  it("refuses a decision posted without the CSRF token", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const page = await session.get(authorizeUrl(validParams()));
    const organizationId = /name="organization_id" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const res = await session.post("/oauth/authorize", {
      ...validParams(),
      organization_id: organizationId,
      decision: "approve",
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers.location).toBeUndefined();
    expect(res.body).toContain("This page has expired");
    expect(res.body).toContain(
      `href="${authorizeUrl(validParams()).replaceAll("&", "&amp;")}">Review the request again`,
    );
  });

  it("tells a member who is not an admin that an admin must approve, and refuses a forged approval", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("member@acme.example", PASSWORD);
    const page = await session.get(authorizeUrl(validParams()));
    expect(page.statusCode).toBe(403);
    expect(page.body).toContain("An admin must approve this addon");
    expect(page.body).not.toContain(">Approve</button>");
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const forged = await session.post("/oauth/authorize", {
      ...validParams(),
      _csrf,
      member_id: memberIdOf(page.body),
      organization_id: fixtures.acme.organization.id,
      decision: "approve",
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.headers.location).toBeUndefined();
    const back = await session.post("/oauth/authorize", {
      ...validParams(),
      _csrf,
      decision: "deny",
    });
    expect(addonReturnUrl(back).searchParams.get("error")).toBe("access_denied");
  });
});
