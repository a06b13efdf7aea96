import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiTokens, oauthGrants } from "../../src/db/schema/index.js";
import {
  importOAuthWorkspaces,
  issueCode,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let admin: InjectSession;
const REDIRECT = "https://timeline.example/cb";

beforeAll(async () => {
  t = await createTestApp();
  fixtures = await importOAuthWorkspaces(t.db);
  admin = new InjectSession(t.app);
  await admin.signIn("admin@acme.example", PASSWORD);
});
afterAll(() => t.close());

const csrf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1] as string;

/** An addon connected to acme, its token redeemed at the token endpoint and used once. */
async function connectedAddonWithUsedToken(name: string) {
  const client = await registerClient(t.db, fixtures.devco, [REDIRECT], { name });
  const code = await issueCode(t.db, {
    clientRecordId: client.id,
    organization: fixtures.acme,
    redirectUri: REDIRECT,
    scopes: ["projects:read"],
  });
  const exchanged = await t.app.inject({
    method: "POST",
    url: "/api/v1/oauth/token",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: client.clientId,
      client_secret: client.clientSecret ?? "",
    }).toString(),
  });
  expect(exchanged.statusCode, exchanged.body).toBe(200);
  const token = (exchanged.json() as { access_token: string }).access_token;
  expect((await api(t.app, "GET", "/api/v1/me", { token })).status).toBe(200);
  // Last use is stamped off the request's path.
  await eventually(async () => {
    const rows = await t.db
      .select({ lastUsedAt: apiTokens.lastUsedAt })
      .from(apiTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, apiTokens.grantId))
      .where(eq(oauthGrants.clientId, client.id));
    return rows.length === 1 && rows[0]?.lastUsedAt !== null;
  });
  return { client, token };
}

describe("tokens", () => {
  it("lists the tokens addons were issued beside the minted ones, saying which addon", async () => {
    await mintToken(t.db, fixtures.acme, ["tasks:read"]);
    await connectedAddonWithUsedToken("Timeline Addon");
    const page = await admin.get("/admin/acme/tokens");
    expect(page.statusCode).toBe(200);
    const rows = page.body.split("<tr>").slice(2);
    const addonRow = rows.find((row) => row.includes("Timeline Addon"));
    expect(addonRow).toContain("Addon <strong>Timeline Addon</strong>");
    expect(addonRow).not.toContain("/revoke");
    expect(addonRow).toMatch(/data-label="Last used">\d{4}-\d{2}-\d{2} /);
    expect(rows.some((row) => row.includes("Minted here") && row.includes("/revoke"))).toBe(true);
  });

  it("asks before revoking, on a page that works without script, and only for its own tokens", async () => {
    const token = await mintToken(t.db, fixtures.acme, ["tasks:read"]);
    const list = await admin.get("/admin/acme/tokens");
    const tokenId = /tokens\/([0-9a-f-]{36})\/revoke/.exec(list.body)?.[1] as string;
    const confirm = await admin.get(`/admin/acme/tokens/${tokenId}/revoke`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain("<h1>Revoke this token?</h1>");
    expect(confirm.body).toMatch(
      /<form method="post" action="\/admin\/acme\/tokens\/[0-9a-f-]{36}\/revoke"/,
    );
    expect(confirm.body).not.toContain("<script");
    // Looking is harmless: the token still works until the form is posted.
    expect((await api(t.app, "GET", "/api/v1/me", { token })).status).toBe(200);

    await mintToken(t.db, fixtures.devco, ["tasks:read"]);
    const [foreign] = await t.db
      .select({ id: apiTokens.id })
      .from(apiTokens)
      .where(eq(apiTokens.organizationId, fixtures.devco.organization.id));
    expect((await admin.get(`/admin/acme/tokens/${foreign?.id}/revoke`)).statusCode).toBe(404);
  });

  it("puts a refusal next to the field it concerns", async () => {
    const page = await admin.get("/admin/acme/tokens");
    const refused = await admin.post("/admin/acme/tokens", { _csrf: csrf(page.body), name: "x" });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(
      /<fieldset aria-invalid="true" aria-describedby="token-scopes-error">/,
    );
    expect(refused.body).toContain(
      'id="token-scopes-error" role="alert">Choose at least one scope.',
    );

    const hooks = await admin.get("/admin/acme/webhooks");
    const badUrl = await admin.post("/admin/acme/webhooks", {
      _csrf: csrf(hooks.body),
      url: "ftp://nope.example/x",
      events: "task.created",
    });
    expect(badUrl.statusCode).toBe(400);
    expect(badUrl.body).toMatch(
      /id="webhook-url"[^>]*aria-invalid="true" aria-describedby="webhook-url-error"/,
    );
    expect(badUrl.body).toContain('id="webhook-url-error" role="alert"');
    expect(badUrl.body).toContain('value="ftp://nope.example/x"');
  });
});

describe("connected addons", () => {
  it("shows who approved each addon, when it was last used, and what disconnecting ends", async () => {
    const { token } = await connectedAddonWithUsedToken("Roadmap Addon");
    const page = await admin.get("/admin/acme/connections");
    const row = page.body.split("<tr>").find((part) => part.includes("Roadmap Addon")) ?? "";
    expect(row).toContain("Ada Admin");
    expect(row).toContain("admin@acme.example");
    expect(row).toMatch(/data-label="Last used" class="nowrap">\d{4}-\d{2}-\d{2} /);
    const grantId = /connections\/([0-9a-f-]{36})\/revoke/.exec(row)?.[1] as string;

    const confirm = await admin.get(`/admin/acme/connections/${grantId}/revoke`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain("Every token of this addon stops working at once");
    expect(confirm.body).toContain("1 token works today");
    expect((await api(t.app, "GET", "/api/v1/me", { token })).status).toBe(200);

    const done = await admin.post(`/admin/acme/connections/${grantId}/revoke`, {
      _csrf: csrf(confirm.body),
    });
    expect(done.statusCode).toBe(303);
    expect((await api(t.app, "GET", "/api/v1/me", { token })).status).toBe(401);
    // Once disconnected there is nothing left to confirm.
    expect((await admin.get(`/admin/acme/connections/${grantId}/revoke`)).statusCode).toBe(404);
  });
});
