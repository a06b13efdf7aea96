import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken, revokeToken } from "../../src/modules/tokens/service.js";
import { removeMember } from "../../src/modules/users/service.js";
import {
  importOAuthWorkspaces,
  issueCode,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import { createSiblingApp, createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import { redeemCode } from "../support/tokens.js";

// Principals are kept in each process without weakening revocation: the instance
// that revokes refuses at once, every other instance on the same database as soon as it hears
// the change, and an instance that may have missed a change trusts nothing it kept.

let a: TestApp;
let b: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let admin: InjectSession;

beforeAll(async () => {
  a = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  b = await createSiblingApp(a);
  fixtures = await importOAuthWorkspaces(a.db);
  admin = new InjectSession(a.app);
  await admin.signIn("admin@acme.example", PASSWORD);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const status = async (t: TestApp, token: string) =>
  (await api(t.app, "GET", "/api/v1/me", { token })).status;

/** Served by both instances, so each now holds its principal in memory. */
async function heldByBoth(token: string): Promise<void> {
  expect(await status(a, token)).toBe(200);
  expect(await status(b, token)).toBe(200);
}

const refusedBy = (t: TestApp, token: string) =>
  eventually(async () => (await status(t, token)) === 401);

describe("a principal kept in memory", () => {
  it("is refused at once by the instance that revokes its token, and soon by the others", async () => {
    const { id, token } = await createToken(a.db, systemAudit, {
      organizationId: fixtures.acme.organization.id,
      userId: fixtures.acme.users[0]!.id,
      scopes: ["projects:read"],
    });
    await heldByBoth(token);
    const form = await admin.csrfTokenOf("/admin/acme/tokens");
    const revoked = await admin.post(`/admin/acme/tokens/${id}/revoke`, { _csrf: form });
    expect(revoked.statusCode).toBe(303);
    expect(await status(a, token)).toBe(401);
    await refusedBy(b, token);
  });

  it("is refused by both once its grant is revoked in the admin area", async () => {
    const addon = await registerClient(a.db, fixtures.devco, ["https://gantt.example/cb"]);
    const code = await issueCode(a.db, {
      clientRecordId: addon.id,
      organization: fixtures.acme,
      redirectUri: addon.redirectUri,
      scopes: ["projects:read"],
    });
    const exchanged = await redeemCode(a.app, {
      code,
      redirectUri: addon.redirectUri,
      clientId: addon.clientId,
      clientSecret: addon.clientSecret as string,
    });
    const token = exchanged.json().access_token as string;
    await heldByBoth(token);
    const page = await admin.get("/admin/acme/connections");
    const grantId = /connections\/([0-9a-f-]{36})\/revoke/.exec(page.body)?.[1];
    const form = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    await admin.post(`/admin/acme/connections/${grantId}/revoke`, { _csrf: form });
    expect(await status(a, token)).toBe(401);
    await refusedBy(b, token);
  });

  it("loses its author on both when the member is removed by another process", async () => {
    const token = await mintToken(a.db, fixtures.acme, ["tasks:write"], 1);
    const write = (t: TestApp) =>
      api(t.app, "POST", "/api/v1/projects/rover/tasks", { token, body: { title: "Weigh" } });
    expect((await write(a)).status).toBe(200);
    expect((await write(b)).status).toBe(200);
    await removeMember(a.db, systemAudit, { orgSlug: "acme", email: "member@acme.example" });
    for (const instance of [a, b]) {
      await eventually(async () => (await write(instance)).status === 400);
    }
  });

  it("answers /me with the organisation's new name on both once it is renamed", async () => {
    const token = await mintToken(a.db, fixtures.acme);
    const nameOn = async (t: TestApp) =>
      (await api(t.app, "GET", "/api/v1/me", { token })).body.data.organization.name;
    expect(await nameOn(a)).toBe(await nameOn(b));
    await a.db.execute(
      sql`update organizations set name = 'Acme Renamed' where id = ${fixtures.acme.organization.id}`,
    );
    await eventually(async () => (await nameOn(a)) === "Acme Renamed");
    await eventually(async () => (await nameOn(b)) === "Acme Renamed");
  });

  it("is not trusted after the instance may have missed a change", async () => {
    const { id, token } = await createToken(a.db, systemAudit, {
      organizationId: fixtures.acme.organization.id,
      userId: fixtures.acme.users[0]!.id,
      scopes: ["projects:read"],
    });
    await heldByBoth(token);
    // Every listening connection drops (Postgres restarts, a proxy cuts idle links); the token
    // is revoked while the instances may not hear it.
    await a.db.execute(sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and query ilike 'listen%'`);
    await revokeToken(a.db, systemAudit, { tokenId: id });
    await refusedBy(a, token);
    await refusedBy(b, token);
  });
});
