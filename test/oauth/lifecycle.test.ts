import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oauthClients, oauthGrants } from "../../src/db/schema/index.js";
import { findAddonByClientId } from "../../src/oauth/addons.js";
import { api } from "../support/api.js";
import { createSiblingApp, createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { runCli, runCliJson, runCliOk } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { redeemCode } from "../support/tokens.js";
import { importOAuthWorkspaces, issueCode, PASSWORD, registerClient } from "./oauth-fixtures.js";

// An addon's developer renames it, changes its redirect URIs, replaces its secret and deletes
// it, from `svc` and the admin area; a deleted addon's tokens are refused on every instance.

let a: TestApp;
let b: TestApp;
let env: Record<string, string>;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;

beforeAll(async () => {
  a = await createTestApp({ RATE_LIMIT_MAX: "100000", AUTH_RATE_LIMIT_MAX: "100000" });
  b = await createSiblingApp(a);
  env = { DATABASE_URL: a.config.databaseUrl as string };
  fixtures = await importOAuthWorkspaces(a.db);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

type Client = Awaited<ReturnType<typeof registerClient>>;

/** acme connects the addon; the access token its code is exchanged for with `secret`. */
async function connect(client: Client, secret = client.clientSecret as string) {
  const code = await issueCode(a.db, {
    clientRecordId: client.id,
    organization: fixtures.acme,
    redirectUri: client.redirectUri,
    scopes: ["projects:read"],
  });
  return redeemCode(a.app, {
    code,
    redirectUri: client.redirectUri,
    clientId: client.clientId,
    clientSecret: secret,
  });
}

const meStatus = async (t: TestApp, token: string) =>
  (await api(t.app, "GET", "/api/v1/me", { token })).status;

describe("svc oauth-client update", () => {
  it("renames an addon and replaces its redirect URIs, by the registration rules", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["https://old.example/cb"]);
    await runCliOk(
      [
        "oauth-client",
        "update",
        "--client-id",
        client.clientId,
        "--name",
        "  Renamed ",
        "--redirect-uri",
        "https://new.example/cb",
        "--redirect-uri",
        "http://localhost:5173/cb",
      ],
      env,
    );
    const addon = await findAddonByClientId(a.db, client.clientId);
    expect(addon?.name).toBe("Renamed");
    expect(addon?.redirectUris).toEqual(["http://localhost:5173/cb", "https://new.example/cb"]);

    const nameOnly = await runCli(
      ["oauth-client", "update", "--client-id", client.clientId, "--name", "Again"],
      env,
    );
    expect(nameOnly.code).toBe(0);
    const again = await findAddonByClientId(a.db, client.clientId);
    expect(again?.name).toBe("Again");
    expect(again?.redirectUris).toEqual(addon?.redirectUris);

    const refused = await runCli(
      [
        "oauth-client",
        "update",
        "--client-id",
        client.clientId,
        "--redirect-uri",
        "http://x.example/cb",
      ],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("redirect URI http://x.example/cb must use https");
    expect((await findAddonByClientId(a.db, client.clientId))?.redirectUris).toEqual(
      addon?.redirectUris,
    );
  });

  it("refuses an unknown client and a call that changes nothing", async () => {
    const unknown = await runCli(
      ["oauth-client", "update", "--client-id", "svcc_nope", "--name", "X"],
      env,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("svcc_nope");
    const nothing = await runCli(["oauth-client", "update", "--client-id", "svcc_nope"], env);
    expect(nothing.code).toBe(2);
  });
});

describe("svc oauth-client rotate-secret", () => {
  it("prints a new secret once; the old one is refused at the token endpoint at once", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["https://rotate.example/cb"]);
    expect((await connect(client)).statusCode).toBe(200);
    const printed = await runCliJson(
      ["oauth-client", "rotate-secret", "--client-id", client.clientId, "--json"],
      env,
    );
    expect(Object.keys(printed).sort()).toEqual(["clientId", "clientSecret"]);
    expect(printed.clientId).toBe(client.clientId);
    expect(printed.clientSecret).toMatch(/^svcs_[A-Za-z0-9_-]+$/);
    expect(printed.clientSecret).not.toBe(client.clientSecret);

    const old = await connect(client);
    expect(old.statusCode).toBe(401);
    expect(old.json().error).toBe("invalid_client");
    expect((await connect(client, printed.clientSecret)).statusCode).toBe(200);
  });

  it("refuses a public client, which has no secret, and an unknown client", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["http://127.0.0.1:4000/cb"], {
      isPublic: true,
    });
    const refused = await runCli(
      ["oauth-client", "rotate-secret", "--client-id", client.clientId],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("public client has no secret");
    const unknown = await runCli(
      ["oauth-client", "rotate-secret", "--client-id", "svcc_nope"],
      env,
    );
    expect(unknown.code).toBe(1);
  });
});

describe("svc oauth-client delete", () => {
  it("revokes every grant and token of the addon, on every instance", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["https://delete.example/cb"]);
    const token = (await connect(client)).json().access_token as string;
    // Served by both instances, so each holds its principal in memory.
    expect(await meStatus(a, token)).toBe(200);
    expect(await meStatus(b, token)).toBe(200);

    const deleted = await runCli(["oauth-client", "delete", "--client-id", client.clientId], env);
    expect(deleted.stderr).toBe("");
    expect(deleted.code).toBe(0);
    await eventually(async () => (await meStatus(a, token)) === 401);
    await eventually(async () => (await meStatus(b, token)) === 401);
    expect(
      await a.db.select().from(oauthGrants).where(eq(oauthGrants.clientId, client.id)),
    ).toEqual([]);
    expect(await findAddonByClientId(a.db, client.clientId)).toBeNull();
    const exchange = await redeemCode(a.app, {
      code: "svca_unknown",
      redirectUri: client.redirectUri,
      clientId: client.clientId,
      clientSecret: client.clientSecret as string,
    });
    expect(exchange.json().error).toBe("invalid_client");

    const again = await runCli(["oauth-client", "delete", "--client-id", client.clientId], env);
    expect(again.code).toBe(1);
  });
});

describe("the admin area's addon page", () => {
  let admin: InjectSession;
  beforeAll(async () => {
    admin = new InjectSession(a.app);
    await admin.signIn("admin@devco.example", PASSWORD);
  });

  it("edits an addon, showing a refused redirect URI beside its field", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["https://page.example/cb"]);
    const list = await admin.get("/admin/devco/addons");
    expect(list.body).toContain(`/admin/devco/addons/${client.id}`);
    const url = `/admin/devco/addons/${client.id}`;
    const _csrf = await admin.csrfTokenOf(url);
    const refused = await admin.post(url, {
      _csrf,
      name: "Page addon",
      redirect_uris: "ftp://page.example/cb",
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('id="addon-redirect-uris-error"');
    const saved = await admin.post(url, {
      _csrf,
      name: "Page addon",
      redirect_uris: "https://page.example/cb\r\nhttps://page.example/other",
    });
    expect(saved.statusCode).toBe(303);
    const addon = await findAddonByClientId(a.db, client.clientId);
    expect(addon?.name).toBe("Page addon");
    expect(addon?.redirectUris).toEqual(["https://page.example/cb", "https://page.example/other"]);
  });

  it("replaces the secret, showing the new one once", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["https://secret.example/cb"]);
    const url = `/admin/devco/addons/${client.id}`;
    const _csrf = await admin.csrfTokenOf(url);
    const shown = await admin.post(`${url}/rotate-secret`, { _csrf });
    expect(shown.statusCode).toBe(200);
    const secret = /id="client-secret"[^>]*value="(svcs_[^"]+)"/.exec(shown.body)?.[1];
    expect(secret).toBeDefined();
    expect((await connect(client)).statusCode).toBe(401);
    expect((await connect(client, secret)).statusCode).toBe(200);
  });

  it("deletes an addon after a confirmation; its tokens are refused on both instances", async () => {
    const client = await registerClient(a.db, fixtures.devco, ["https://gone.example/cb"]);
    const token = (await connect(client)).json().access_token as string;
    expect(await meStatus(a, token)).toBe(200);
    expect(await meStatus(b, token)).toBe(200);
    const confirm = `/admin/devco/addons/${client.id}/delete`;
    const _csrf = await admin.csrfTokenOf(confirm);
    const deleted = await admin.post(confirm, { _csrf });
    expect(deleted.statusCode).toBe(303);
    expect((await admin.get(deleted.headers.location as string)).body).toContain("Addon deleted");
    await eventually(async () => (await meStatus(a, token)) === 401);
    await eventually(async () => (await meStatus(b, token)) === 401);
    expect(
      await a.db.select().from(oauthGrants).where(eq(oauthGrants.clientId, client.id)),
    ).toEqual([]);
    expect((await admin.get(`/admin/devco/addons/${client.id}`)).statusCode).toBe(404);
  });

  it("does not show or change another organisation's addon", async () => {
    const client = await registerClient(a.db, fixtures.acme, ["https://theirs.example/cb"]);
    const url = `/admin/devco/addons/${client.id}`;
    expect((await admin.get(url)).statusCode).toBe(404);
    const _csrf = await admin.csrfTokenOf("/admin/devco/addons");
    expect((await admin.post(`${url}/rotate-secret`, { _csrf })).statusCode).toBe(404);
    await admin.post(`${url}/delete`, { _csrf });
    const [still] = await a.db
      .select({ secretHash: oauthClients.secretHash })
      .from(oauthClients)
      .where(eq(oauthClients.id, client.id));
    expect(still).toBeDefined();
    expect((await connect(client)).statusCode).toBe(200);
  });
});
