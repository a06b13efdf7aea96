import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiTokens, oauthGrants } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { hashSecret } from "../../src/modules/tokens/service.js";
import { revokeGrant } from "../../src/oauth/grants.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import {
  importOAuthWorkspaces,
  issueCode,
  pkcePair,
  registerClient,
  userOf,
} from "./oauth-fixtures.js";

const TOKEN_URL = "/api/v1/oauth/token";
const REDIRECT = "https://addon.example/callback";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let confidential: Awaited<ReturnType<typeof registerClient>>;
let publicClient: Awaited<ReturnType<typeof registerClient>>;

beforeAll(async () => {
  t = await createTestApp();
  fixtures = await importOAuthWorkspaces(t.db);
  confidential = await registerClient(t.db, fixtures.devco, [REDIRECT, "http://localhost:8080/cb"]);
  publicClient = await registerClient(t.db, fixtures.devco, ["http://127.0.0.1:9999/cb"], {
    isPublic: true,
    name: "Desktop Addon",
  });
});
afterAll(() => t.close());

type Form = Record<string, string | string[]>;

function encode(form: Form): string {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(form)) {
    for (const entry of Array.isArray(value) ? value : [value]) body.append(name, entry);
  }
  return body.toString();
}

function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${clientId}:${secret}`).toString("base64")}`;
}

async function exchange(
  form: Form,
  options: {
    headers?: Record<string, string>;
    query?: string;
    app?: TestApp;
    remoteAddress?: string;
  } = {},
) {
  const response = await (options.app ?? t).app.inject({
    method: "POST",
    url: `${TOKEN_URL}${options.query ?? ""}`,
    headers: { "content-type": "application/x-www-form-urlencoded", ...options.headers },
    payload: encode(form),
    remoteAddress: options.remoteAddress ?? "127.0.0.1",
  });
  return { status: response.statusCode, headers: response.headers, body: response.json() };
}

function codeFor(
  scopes: Parameters<typeof issueCode>[1]["scopes"],
  extra: Partial<Parameters<typeof issueCode>[1]> = {},
) {
  return issueCode(t.db, {
    clientRecordId: confidential.id,
    organization: fixtures.acme,
    redirectUri: REDIRECT,
    scopes,
    ...extra,
  });
}

function confidentialForm(code: string, extra: Form = {}): Form {
  return {
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    client_id: confidential.clientId,
    client_secret: confidential.clientSecret as string,
    ...extra,
  };
}

describe("a successful exchange", () => {
  it("answers the token with no-store and the code's scopes (client_secret_post)", async () => {
    const code = await codeFor(["projects:read", "pages:read"]);
    const res = await exchange(confidentialForm(code));
    expect(res.status).toBe(200);
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers.pragma).toBe("no-cache");
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(["access_token", "scope", "token_type"]);
    expect(res.body.access_token).toMatch(/^svc_live_/);
    expect(res.body.token_type).toBe("Bearer");
    expect(res.body.scope).toBe("projects:read pages:read");
  });

  it("issues a token of the approving organisation, attributed to the approving admin", async () => {
    const code = await codeFor(["projects:read"]);
    const res = await exchange(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT },
      {
        headers: {
          authorization: basic(confidential.clientId, confidential.clientSecret as string),
        },
      },
    );
    expect(res.status).toBe(200);
    const me = await api(t.app, "GET", "/api/v1/me", { token: res.body.access_token });
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({
      organization: {
        id: fixtures.acme.organization.id,
        slug: fixtures.acme.organization.slug,
        name: fixtures.acme.organization.name,
      },
      scopes: ["projects:read"],
      pluginId: confidential.id,
    });
    const [row] = await t.db
      .select()
      .from(apiTokens)
      .where(eq(apiTokens.name, "OAuth: Gantt Addon"))
      .limit(1);
    expect(row?.userId).toBe(userOf(fixtures.acme).id);
    expect(row?.grantId).not.toBeNull();
    expect(row?.oauthCodeId).not.toBeNull();
    // Works like a minted token: the granted scope reads, a scope not granted is refused.
    expect(
      (await api(t.app, "GET", "/api/v1/projects", { token: res.body.access_token })).status,
    ).toBe(200);
    const tasks = await api(t.app, "GET", "/api/v1/projects/rover/tasks", {
      token: res.body.access_token,
    });
    expect(tasks.status).toBe(403);
  });

  it("redeems a public client's code with its PKCE verifier", async () => {
    const { verifier, challenge } = pkcePair();
    const code = await issueCode(t.db, {
      clientRecordId: publicClient.id,
      organization: fixtures.acme,
      redirectUri: publicClient.redirectUri,
      scopes: ["tasks:read", "tasks:write"],
      codeChallenge: challenge,
    });
    const res = await exchange({
      grant_type: "authorization_code",
      code,
      redirect_uri: publicClient.redirectUri,
      client_id: publicClient.clientId,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe("tasks:read tasks:write");
  });
});

describe("the token endpoint's errors", () => {
  it.each([
    ["an unknown grant type", { grant_type: "client_credentials" }, 400, "unsupported_grant_type"],
    ["no grant type", { grant_type: undefined }, 400, "invalid_request"],
    ["no code", { code: undefined }, 400, "invalid_request"],
    ["no redirect_uri", { redirect_uri: undefined }, 400, "invalid_request"],
    ["no client_id", { client_id: undefined, client_secret: undefined }, 400, "invalid_request"],
    ["an unknown client", { client_id: "svcc_nobody" }, 401, "invalid_client"],
    ["a wrong secret", { client_secret: "svcs_wrong" }, 401, "invalid_client"],
    ["no secret from a confidential client", { client_secret: undefined }, 401, "invalid_client"],
    ["an unknown code", { code: "svca_unknown" }, 400, "invalid_grant"],
    ["another redirect_uri", { redirect_uri: "http://localhost:8080/cb" }, 400, "invalid_grant"],
    [
      "a redirect_uri differing by a trailing slash",
      { redirect_uri: `${REDIRECT}/` },
      400,
      "invalid_grant",
    ],
    [
      "a verifier for a code issued without challenge",
      { code_verifier: "a".repeat(43) },
      400,
      "invalid_grant",
    ],
    ["a malformed verifier", { code_verifier: "short" }, 400, "invalid_request"],
  ] as const)("refuses %s", async (_name, changes, status, error) => {
    const code = await codeFor(["projects:read"]);
    const form: Form = confidentialForm(code);
    for (const [name, value] of Object.entries(changes)) {
      if (value === undefined) delete form[name];
      else form[name] = value;
    }
    const res = await exchange(form);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error, error_description: expect.any(String) });
    expect(res.body.ok).toBeUndefined();
    expect(res.headers["cache-control"]).toBe("no-store");
    // Only a client that used HTTP Basic gets the Basic challenge.
    expect(res.headers["www-authenticate"]).toBeUndefined();
  });

  it("answers a failed Basic authentication with 401 and WWW-Authenticate: Basic", async () => {
    const code = await codeFor(["projects:read"]);
    const res = await exchange(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT },
      { headers: { authorization: basic(confidential.clientId, "svcs_wrong") } },
    );
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_client");
    expect(res.headers["www-authenticate"]).toMatch(/^Basic realm=/);
  });

  it("refuses an expired code", async () => {
    const code = await codeFor(["projects:read"], { ttlSeconds: -1 });
    const res = await exchange(confidentialForm(code));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_grant");
  });

  it("refuses a code issued to another client", async () => {
    const code = await issueCode(t.db, {
      clientRecordId: publicClient.id,
      organization: fixtures.acme,
      redirectUri: publicClient.redirectUri,
      scopes: ["projects:read"],
      codeChallenge: pkcePair().challenge,
    });
    const res = await exchange(confidentialForm(code, { redirect_uri: publicClient.redirectUri }));
    expect(res.body.error).toBe("invalid_grant");
  });

  it("refuses a wrong verifier and a missing one for a code with a challenge", async () => {
    const { challenge } = pkcePair();
    const issue = () =>
      issueCode(t.db, {
        clientRecordId: publicClient.id,
        organization: fixtures.acme,
        redirectUri: publicClient.redirectUri,
        scopes: ["projects:read"],
        codeChallenge: challenge,
      });
    const form = (code: string): Form => ({
      grant_type: "authorization_code",
      code,
      redirect_uri: publicClient.redirectUri,
      client_id: publicClient.clientId,
    });
    const wrong = await exchange({ ...form(await issue()), code_verifier: pkcePair().verifier });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe("invalid_grant");
    const missing = await exchange(form(await issue()));
    expect(missing.body.error).toBe("invalid_grant");
    const withSecret = await exchange({ ...form(await issue()), client_secret: "svcs_anything" });
    expect(withSecret.status).toBe(401);
    expect(withSecret.body.error).toBe("invalid_client");
  });

  it("refuses repeated parameters", async () => {
    const code = await codeFor(["projects:read"]);
    for (const name of ["code", "client_id", "redirect_uri", "grant_type"]) {
      const form = confidentialForm(code);
      form[name] = [String(form[name]), String(form[name])];
      const res = await exchange(form);
      expect(res.status, name).toBe(400);
      expect(res.body.error, name).toBe("invalid_request");
    }
    // None of those attempts used the code up.
    expect((await exchange(confidentialForm(code))).status).toBe(200);
  });

  it("refuses a NUL character in the client id as invalid_request, not a server error", async () => {
    const code = await codeFor(["projects:read"]);
    const res = await exchange(confidentialForm(code, { client_id: "svcc_\u0000" }));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });

  it("never accepts a client secret in the query string", async () => {
    const code = await codeFor(["projects:read"]);
    const form = confidentialForm(code);
    const { client_secret, ...rest } = form;
    const res = await exchange(rest, {
      query: `?client_secret=${encodeURIComponent(String(client_secret))}`,
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });

  it("refuses credentials sent both by Basic and in the body", async () => {
    const code = await codeFor(["projects:read"]);
    const res = await exchange(confidentialForm(code), {
      headers: { authorization: basic(confidential.clientId, confidential.clientSecret as string) },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });

  it("accepts only form bodies, and the JSON API still refuses them", async () => {
    const code = await codeFor(["projects:read"]);
    const json = await t.app.inject({
      method: "POST",
      url: TOKEN_URL,
      headers: { "content-type": "application/json" },
      payload: JSON.stringify(confidentialForm(code)),
    });
    expect(json.statusCode).toBe(400);
    expect(json.json().error).toBe("invalid_request");
    const empty = await t.app.inject({ method: "POST", url: TOKEN_URL });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBe("invalid_request");

    const token = (await exchange(confidentialForm(code))).body.access_token;
    const form = await t.app.inject({
      method: "POST",
      url: "/api/v1/projects/rover/tasks",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      payload: "title=Hello",
    });
    expect(form.statusCode).toBe(403);
    const minted = await t.app.inject({
      method: "POST",
      url: "/api/v1/projects/rover/tasks",
      headers: {
        authorization: `Bearer ${(await exchange(confidentialForm(await codeFor(["tasks:write"])))).body.access_token}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      payload: "title=Hello",
    });
    expect(minted.statusCode).toBe(400);
    expect(minted.json()).toMatchObject({ ok: false, error: "invalid_request" });
  });

  it("is not part of the OpenAPI document", async () => {
    const document = (await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).json();
    expect(Object.keys(document.paths)).not.toContain("/oauth/token");
  });
});

describe("single use", () => {
  it("refuses a code used twice and revokes the token issued from it", async () => {
    const code = await codeFor(["projects:read"]);
    const first = await exchange(confidentialForm(code));
    expect(first.status).toBe(200);
    expect((await api(t.app, "GET", "/api/v1/me", { token: first.body.access_token })).status).toBe(
      200,
    );
    const second = await exchange(confidentialForm(code));
    expect(second.status).toBe(400);
    expect(second.body.error).toBe("invalid_grant");
    expect((await api(t.app, "GET", "/api/v1/me", { token: first.body.access_token })).status).toBe(
      401,
    );
  });

  it("gives exactly one token to two concurrent redemptions of one code", async () => {
    const code = await codeFor(["projects:read"]);
    const results = await Promise.all([
      exchange(confidentialForm(code)),
      exchange(confidentialForm(code)),
    ]);
    const statuses = results.map((result) => result.status).sort();
    expect(statuses).toEqual([200, 400]);
    expect(results.find((result) => result.status === 400)?.body.error).toBe("invalid_grant");
    const winner = results.find((result) => result.status === 200)?.body.access_token;
    const [issued] = await t.db
      .select({ oauthCodeId: apiTokens.oauthCodeId })
      .from(apiTokens)
      .where(eq(apiTokens.tokenHash, hashSecret(winner)));
    const fromCode = await t.db
      .select({ id: apiTokens.id })
      .from(apiTokens)
      .where(eq(apiTokens.oauthCodeId, issued?.oauthCodeId as string));
    expect(fromCode).toHaveLength(1);
    // The losing redemption is a second use of the code, so the one token is revoked as well.
    expect((await api(t.app, "GET", "/api/v1/me", { token: winner })).status).toBe(401);
  });
});

describe("grants", () => {
  it("keeps one live grant per addon and organisation, widened by each approval", async () => {
    const other = await registerClient(t.db, fixtures.devco, [REDIRECT], {
      name: "Widening Addon",
    });
    const issue = (scopes: Parameters<typeof issueCode>[1]["scopes"]) =>
      issueCode(t.db, {
        clientRecordId: other.id,
        organization: fixtures.acme,
        redirectUri: REDIRECT,
        scopes,
      });
    const redeem = async (code: string) =>
      exchange({
        grant_type: "authorization_code",
        code,
        redirect_uri: REDIRECT,
        client_id: other.clientId,
        client_secret: other.clientSecret as string,
      });
    const first = await redeem(await issue(["projects:read"]));
    const second = await redeem(await issue(["tasks:read"]));
    expect(second.body.scope).toBe("tasks:read");
    const grants = await t.db.select().from(oauthGrants).where(eq(oauthGrants.clientId, other.id));
    expect(grants).toHaveLength(1);
    expect([...(grants[0]?.scopes ?? [])].sort()).toEqual(["projects:read", "tasks:read"]);

    expect(await revokeGrant(t.db, systemAudit, grants[0]?.id as string)).toBe(true);
    for (const token of [first.body.access_token, second.body.access_token]) {
      expect((await api(t.app, "GET", "/api/v1/me", { token })).status).toBe(401);
    }
    const again = await redeem(await issue(["pages:read"]));
    expect((await api(t.app, "GET", "/api/v1/me", { token: again.body.access_token })).status).toBe(
      200,
    );
    const after = await t.db.select().from(oauthGrants).where(eq(oauthGrants.clientId, other.id));
    expect(after).toHaveLength(2);
    expect(after.find((grant) => grant.revokedAt === null)?.scopes).toEqual(["pages:read"]);
  });
});

describe("the token lookup", () => {
  it("refuses a token whose grant is revoked, even when the token row itself is not", async () => {
    const code = await codeFor(["projects:read"]);
    const token = (await exchange(confidentialForm(code))).body.access_token;
    const [row] = await t.db
      .select({ grantId: apiTokens.grantId })
      .from(apiTokens)
      .where(eq(apiTokens.tokenHash, hashSecret(token)));
    await t.db
      .update(oauthGrants)
      .set({ revokedAt: new Date() })
      .where(eq(oauthGrants.id, row?.grantId as string));
    const me = await api(t.app, "GET", "/api/v1/me", { token });
    expect(me.status).toBe(401);
    expect(me.body.error).toBe("invalid_token");
  });
});

describe("the failed client authentication limit", () => {
  let limited: TestApp;
  let client: Awaited<ReturnType<typeof registerClient>>;
  let code: string;

  beforeAll(async () => {
    limited = await createTestApp({ AUTH_RATE_LIMIT_MAX: "2" });
    const workspaces = await importOAuthWorkspaces(limited.db);
    client = await registerClient(limited.db, workspaces.devco, [REDIRECT]);
    code = await issueCode(limited.db, {
      clientRecordId: client.id,
      organization: workspaces.acme,
      redirectUri: REDIRECT,
      scopes: ["projects:read"],
    });
  });
  afterAll(() => limited.close());

  const form = (secret: string): Form => ({
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    client_id: client.clientId,
    client_secret: secret,
  });

  it("answers an address 429 with Retry-After once its failures are used up, even for the right secret", async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await exchange(form("svcs_wrong"), { app: limited });
      expect(res.status).toBe(401);
    }
    const refused = await exchange(form(client.clientSecret as string), { app: limited });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe("invalid_client");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // Client ids are public: the failures lock out the address that made them, not the client.
    const elsewhere = await exchange(form(client.clientSecret as string), {
      app: limited,
      remoteAddress: "10.9.8.7",
    });
    expect(elsewhere.status).toBe(200);
  });

  it("lets no more wrong secrets through than the allowance when they arrive in parallel", async () => {
    const workspaces = await importOAuthWorkspaces(limited.db, "par");
    const target = await registerClient(limited.db, workspaces.devco, [REDIRECT]);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        exchange(
          { ...form("svcs_wrong"), client_id: target.clientId },
          { app: limited, remoteAddress: "10.9.9.1" },
        ),
      ),
    );
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses).toEqual([401, 401, ...Array(8).fill(429)]);
  });
});
