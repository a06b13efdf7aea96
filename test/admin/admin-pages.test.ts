import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiTokens } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { addUser } from "../../src/modules/users/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import {
  importOAuthWorkspaces,
  issueCode,
  PASSWORD,
  registerClient,
  userOf,
} from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { importFixture, mintToken, workspaceDocument } from "../support/fixtures.js";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let admin: InjectSession;

beforeAll(async () => {
  t = await createTestApp();
  fixtures = await importOAuthWorkspaces(t.db);
  await importFixture(t.db, workspaceDocument("third"));
  // Ada administers acme and devco; "third" is none of hers.
  await addUser(t.db, systemAudit, {
    orgSlug: "devco",
    email: "admin@acme.example",
    name: "Ada Admin",
    role: "admin",
  });
  admin = new InjectSession(t.app);
  await admin.signIn("admin@acme.example", PASSWORD);
});
afterAll(() => t.close());

const csrf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1] as string;

describe("who may use the admin area", () => {
  it("sends a signed-out visitor to sign in, keeping the address", async () => {
    const res = await t.app.inject({ method: "GET", url: "/admin/acme/connections" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/login?return_to=%2Fadmin%2Facme%2Fconnections");
  });

  it("answers a member, and an admin of another organisation, with the same 403 page", async () => {
    const member = new InjectSession(t.app);
    await member.signIn("member@acme.example", PASSWORD);
    for (const [session, url] of [
      [member, "/admin"],
      [member, "/admin/acme"],
      [member, "/admin/acme/tokens"],
      [admin, "/admin/third/tokens"],
      [admin, "/admin/no-such-org/tokens"],
    ] as const) {
      const res = await session.get(url);
      expect(res.statusCode, url).toBe(403);
      expect(res.body, url).toContain("Admins only");
    }
  });

  it("lets an admin of several organisations choose one", async () => {
    await addUser(t.db, systemAudit, {
      orgSlug: "devco",
      email: "admin@acme.example",
      name: "Ada Admin",
      role: "admin",
    });
    const res = await admin.get("/admin");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('href="/admin/acme"');
    expect(res.body).toContain('href="/admin/devco"');
    expect((await admin.get("/admin/devco/tokens")).statusCode).toBe(200);
  });

  it("answers unknown addresses and malformed ids with a 404 page", async () => {
    expect((await admin.get("/admin/acme/nothing-here")).statusCode).toBe(404);
    const page = await admin.get("/admin/acme/tokens");
    const res = await admin.post("/admin/acme/tokens/not-a-uuid/revoke", {
      _csrf: csrf(page.body),
    });
    expect(res.statusCode).toBe(404);
  });
});

describe("webhooks", () => {
  it("goes back to the webhook list after retrying failed deliveries, whatever the query", async () => {
    const page = await admin.get("/admin/acme/webhooks");
    const res = await admin.post("/admin/acme/webhooks/retry-failed?from=somewhere", {
      _csrf: csrf(page.body),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/admin/acme/webhooks");
    const list = await admin.get(res.headers.location as string);
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain("0 failed deliveries queued for another attempt.");
  });

  it("states the URL rule the registration applies in the URL's label", async () => {
    const page = await admin.get("/admin/acme/webhooks");
    expect(page.body).toContain(
      '<label for="webhook-url">Receiver URL <span class="hint">(https, to a public host name; http only for localhost, 127.0.0.1, [::1] outside production; no credentials or #fragment)</span></label>',
    );
  });

  it("shows a webhook subscribed to all as All events, and one with some types by name", async () => {
    const settings = { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 };
    const organizationId = fixtures.acme.organization.id;
    const everything = await createWebhook(t.db, systemAudit, settings, {
      organizationId,
      url: "http://127.0.0.1:9/everything",
      events: ["all"],
    });
    const some = await createWebhook(t.db, systemAudit, settings, {
      organizationId,
      url: "http://127.0.0.1:9/some",
      events: ["task.created", "task.updated"],
    });
    const list = await admin.get("/admin/acme/webhooks");
    const eventsCell = (webhookId: string) =>
      new RegExp(`${webhookId}">[^<]*</a></td>\\s*<td data-label="Events">([^<]*)</td>`).exec(
        list.body,
      )?.[1];
    expect(eventsCell(everything.id)).toBe("All events");
    expect(eventsCell(some.id)).toBe("task.created, task.updated");
    const detail = await admin.get(`/admin/acme/webhooks/${everything.id}`);
    expect(detail.body).toContain("<dt>Events</dt><dd>All events</dd>");
  });
});

describe("an address that cannot be decoded", () => {
  it("gets a 400 page outside the API", async () => {
    const page = await t.app.inject({ method: "GET", url: "/admin/%ED%A0%80" });
    expect(page.statusCode).toBe(400);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(page.body).toContain("<h1>Bad request</h1>");
  });
});

describe("tokens", () => {
  it("mints a token for the organisation, attributed to the signed-in admin", async () => {
    const page = await admin.get("/admin/acme/tokens");
    const res = await admin.post("/admin/acme/tokens", {
      _csrf: csrf(page.body),
      name: "CI",
      scopes: ["pages:read", "meetings:write"],
      expires_in_days: "7",
    });
    expect(res.statusCode).toBe(200);
    const token = /id="new-token"[^>]*value="([^"]+)"/.exec(res.body)?.[1] as string;
    expect(token).toMatch(/^svc_live_/);
    const [row] = await t.db.select().from(apiTokens).where(eq(apiTokens.name, "CI"));
    expect(row?.organizationId).toBe(fixtures.acme.organization.id);
    expect(row?.userId).toBe(userOf(fixtures.acme).id);
    expect(row?.scopes).toEqual(["pages:read", "meetings:write"]);
    const days = ((row?.expiresAt?.getTime() ?? 0) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThan(7.1);
  });

  it.each([
    [{ scopes: [] }, "Choose at least one scope."],
    [{ scopes: ["projects:read", "root:everything"] }, "Unknown scope: root:everything."],
    [{ scopes: ["projects:read"], expires_in_days: "3650" }, "Choose an expiry from the list."],
    [
      { scopes: ["projects:read"], name: "x".repeat(101) },
      "The name may have at most 100 characters.",
    ],
  ])("refuses a mint form with %j", async (form, message) => {
    const before = await t.db.$count(apiTokens);
    const page = await admin.get("/admin/acme/tokens");
    const res = await admin.post("/admin/acme/tokens", { _csrf: csrf(page.body), ...form });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain(message);
    expect(await t.db.$count(apiTokens)).toBe(before);
  });

  it("refuses a mint without the CSRF token", async () => {
    const res = await admin.post("/admin/acme/tokens", { scopes: "projects:read" });
    expect(res.statusCode).toBe(403);
  });

  it("revokes only the organisation's own tokens", async () => {
    const foreign = await mintToken(t.db, fixtures.devco, ["projects:read"]);
    const [foreignRow] = await t.db
      .select({ id: apiTokens.id })
      .from(apiTokens)
      .where(eq(apiTokens.organizationId, fixtures.devco.organization.id));
    const page = await admin.get("/admin/acme/tokens");
    const res = await admin.post(`/admin/acme/tokens/${foreignRow?.id}/revoke`, {
      _csrf: csrf(page.body),
    });
    expect(res.statusCode).toBe(303);
    expect((await admin.get("/admin/acme/tokens")).body).toContain(
      "That token was already revoked.",
    );
    expect((await api(t.app, "GET", "/api/v1/me", { token: foreign })).status).toBe(200);
  });
});

describe("connected addons", () => {
  it("lists the grants connected to the organisation and revokes only those", async () => {
    const client = await registerClient(t.db, fixtures.devco, ["https://addon.example/cb"], {
      name: "Scoped Addon",
    });
    for (const organization of [fixtures.acme, fixtures.devco]) {
      await issueCode(t.db, {
        clientRecordId: client.id,
        organization,
        redirectUri: "https://addon.example/cb",
        scopes: ["projects:read"],
      });
    }
    const page = await admin.get("/admin/acme/connections");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Scoped Addon");
    expect(page.body).toContain(fixtures.devco.organization.name);
    expect(page.body).toContain("Read projects");
    const grantIds = [...page.body.matchAll(/connections\/([0-9a-f-]{36})\/revoke/g)].map(
      (m) => m[1],
    );
    expect(grantIds).toHaveLength(1);

    const devcoPage = await admin.get("/admin/devco/connections");
    const devcoGrant = /connections\/([0-9a-f-]{36})\/revoke/.exec(devcoPage.body)?.[1] as string;
    const refused = await admin.post(`/admin/acme/connections/${devcoGrant}/revoke`, {
      _csrf: csrf(page.body),
    });
    expect(refused.statusCode).toBe(303);
    expect((await admin.get("/admin/devco/connections")).body).toContain(
      `connections/${devcoGrant}/revoke`,
    );

    await admin.post(`/admin/acme/connections/${grantIds[0]}/revoke`, { _csrf: csrf(page.body) });
    const after = await admin.get("/admin/acme/connections");
    expect(after.body).toContain("every token it was issued is revoked");
    expect(after.body).toContain("Disconnected");
  });
});

describe("Your addons", () => {
  it("lists only the addons the organisation develops", async () => {
    await registerClient(t.db, fixtures.devco, ["https://devco.example/cb"], {
      name: "Devco Only",
    });
    const page = await admin.get("/admin/acme/addons");
    expect(page.body).not.toContain("Devco Only");
    const res = await admin.post("/admin/acme/addons", {
      _csrf: csrf(page.body),
      name: "Acme Native",
      redirect_uris: "http://127.0.0.1:4000/cb",
      public: "yes",
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("A public client has no secret");
    expect(res.body).not.toContain("svcs_");
    const list = await admin.get("/admin/acme/addons");
    expect(list.body).toContain("Acme Native");
    expect(list.body).toContain("Public (PKCE)");
  });

  it("keeps the section's first address, /apps, leading to it", async () => {
    const res = await admin.get("/admin/acme/apps");
    expect(res.statusCode).toBe(301);
    expect(res.headers.location).toBe("/admin/acme/addons");
  });
});

describe("Integrations", () => {
  it("gathers API tokens, OAuth apps, connected addons and webhooks, and keeps their addresses", async () => {
    const page = await admin.get("/admin/acme/integrations");
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<h1>Integrations<\/h1>/);
    for (const [section, label] of [
      ["tokens", "API tokens"],
      ["addons", "OAuth apps"],
      ["connections", "Connected addons"],
      ["webhooks", "Webhooks"],
    ]) {
      expect(page.body).toContain(`href="/admin/acme/${section}">${label}</a>`);
      const part = await admin.get(`/admin/acme/${section}`);
      expect(part.statusCode, section).toBe(200);
      // The top navigation marks Integrations as where the part lives.
      expect(part.body).toContain(
        'href="/admin/acme/integrations" aria-current="true">Integrations',
      );
      expect(part.body).toContain(`href="/admin/acme/${section}" aria-current="page">${label}`);
    }
  });

  it("counts each webhook's held and exhausted deliveries", async () => {
    await createWebhook(
      t.db,
      systemAudit,
      { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 },
      {
        organizationId: fixtures.acme.organization.id,
        url: "http://127.0.0.1:9/held",
        events: ["all"],
      },
    );
    const page = await admin.get("/admin/acme/webhooks");
    expect(page.body).toContain('<th scope="col">Held</th>');
    expect(page.body).toContain('<th scope="col">Exhausted</th>');
  });
});

describe("forms and addresses of the wrong shape", () => {
  const expectRefusalPage = (res: { statusCode: number; headers: object; body: string }) => {
    expect(res.statusCode).toBe(400);
    expect((res.headers as Record<string, string>)["content-type"]).toBe(
      "text/html; charset=utf-8",
    );
    expect(res.body).toContain("Request not accepted");
  };

  it("refuses a single-valued field sent twice with the error page naming it", async () => {
    const before = await t.db.$count(apiTokens);
    const page = await admin.get("/admin/acme/tokens");
    const res = await admin.post("/admin/acme/tokens", {
      _csrf: csrf(page.body),
      name: ["one", "two"],
      scopes: "projects:read",
    });
    expectRefusalPage(res);
    expect(res.body).toContain("name: must be sent once");
    expect(await t.db.$count(apiTokens)).toBe(before);

    const addons = await admin.get("/admin/acme/addons");
    const addon = await admin.post("/admin/acme/addons", {
      _csrf: csrf(addons.body),
      name: "Twice",
      redirect_uris: ["https://a.example/cb", "https://b.example/cb"],
    });
    expectRefusalPage(addon);
    expect(addon.body).toContain("redirect_uris: must be sent once");
  });

  it("takes one checkbox as a list of one", async () => {
    const page = await admin.get("/admin/acme/tokens");
    const res = await admin.post("/admin/acme/tokens", {
      _csrf: csrf(page.body),
      name: "one scope",
      scopes: "projects:read",
    });
    expect(res.statusCode).toBe(200);
    const [row] = await t.db.select().from(apiTokens).where(eq(apiTokens.name, "one scope"));
    expect(row?.scopes).toEqual(["projects:read"]);
  });

  it("checks who asks before the form's shape", async () => {
    const form = { name: ["one", "two"], scopes: "projects:read" };
    const signedOut = new InjectSession(t.app);
    const page = await signedOut.get("/login");
    expect(
      (await signedOut.post("/admin/acme/tokens", { _csrf: csrf(page.body), ...form })).statusCode,
    ).toBe(303);
    expect((await admin.post("/admin/acme/tokens", form)).statusCode).toBe(403);
    const tokens = await admin.get("/admin/acme/tokens");
    const foreign = await admin.post("/admin/third/tokens", { _csrf: csrf(tokens.body), ...form });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.body).toContain("Admins only");
  });

  it("answers a malformed id with the same 404 page as an unknown one", async () => {
    for (const url of [
      "/admin/acme/webhooks/not-a-uuid",
      "/admin/acme/tokens/12345/revoke",
      "/admin/acme/connections/not-a-uuid/revoke",
      "/admin/acme/webhooks/00000000-0000-0000-0000-000000000000",
    ]) {
      const res = await admin.get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["content-type"], url).toBe("text/html; charset=utf-8");
    }
  });

  it("refuses a delivery log query it cannot read, naming the parameter", async () => {
    const { id } = await createWebhook(
      t.db,
      systemAudit,
      { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 },
      {
        organizationId: fixtures.acme.organization.id,
        url: "http://127.0.0.1:9/log",
        events: ["task.created"],
      },
    );
    const detail = `/admin/acme/webhooks/${id}`;
    expect((await admin.get(`${detail}?status=&event=&before=`)).statusCode).toBe(200);
    expect((await admin.get(`${detail}?status=failed&event=task.created`)).statusCode).toBe(200);
    const cursor = Buffer.from(`2026-03-01T09:00:00.000000Z|${id}`).toString("base64url");
    expect((await admin.get(`${detail}?before=${cursor}`)).statusCode).toBe(200);
    for (const [query, message] of [
      ["status=bogus", "status: is not a delivery status"],
      ["status=failed&status=delivered", "status: is not a delivery status"],
      ["event=page.updated", "event: is not an event type of this webhook"],
      ["before=nonsense", "before: is not a position in this log"],
      [`before=${cursor}&after=${cursor}`, "after: cannot be sent with before"],
    ]) {
      const res = await admin.get(`${detail}?${query}`);
      expectRefusalPage(res);
      expect(res.body, query).toContain(message);
    }
  });
});
