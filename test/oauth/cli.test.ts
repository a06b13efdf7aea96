import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oauthClients, oauthRedirectUris } from "../../src/db/schema/index.js";
import { hashSecret } from "../../src/modules/tokens/service.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { runCli, runCliJson } from "../support/cli.js";
import { redeemCode } from "../support/tokens.js";
import { importOAuthWorkspaces, issueCode } from "./oauth-fixtures.js";

let t: TestApp;
let env: Record<string, string>;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;

beforeAll(async () => {
  t = await createTestApp();
  env = { DATABASE_URL: t.config.databaseUrl as string };
  fixtures = await importOAuthWorkspaces(t.db);
});
afterAll(() => t.close());

describe("svc oauth-client create", () => {
  it("registers a confidential client and prints its id and secret once", async () => {
    const printed = await runCliJson(
      [
        "oauth-client",
        "create",
        "--org",
        "devco",
        "--name",
        "Gantt",
        "--redirect-uri",
        "https://gantt.example/cb",
        "--redirect-uri",
        "http://localhost:5173/cb",
        "--json",
      ],
      env,
    );
    expect(Object.keys(printed).sort()).toEqual(["clientId", "clientSecret"]);
    expect(printed.clientId).toMatch(/^svcc_[A-Za-z0-9_-]+$/);
    expect(printed.clientSecret).toMatch(/^svcs_[A-Za-z0-9_-]+$/);
    const [row] = await t.db
      .select()
      .from(oauthClients)
      .where(eq(oauthClients.clientId, printed.clientId));
    expect(row?.organizationId).toBe(fixtures.devco.organization.id);
    expect(row?.isPublic).toBe(false);
    expect(row?.secretHash).toBe(hashSecret(printed.clientSecret));
    const uris = await t.db
      .select({ uri: oauthRedirectUris.uri })
      .from(oauthRedirectUris)
      .where(eq(oauthRedirectUris.clientId, row?.id as string));
    expect(uris.map((entry) => entry.uri).sort()).toEqual([
      "http://localhost:5173/cb",
      "https://gantt.example/cb",
    ]);
  });

  it("registers a public client without a secret", async () => {
    const res = await runCli(
      [
        "oauth-client",
        "create",
        "--org",
        "devco",
        "--name",
        "Desktop",
        "--redirect-uri",
        "http://127.0.0.1:4000/cb",
        "--public",
        "--json",
      ],
      env,
    );
    expect(res.code).toBe(0);
    const printed = JSON.parse(res.stdout);
    expect(Object.keys(printed)).toEqual(["clientId"]);
  });

  it("refuses a redirect URI the rules do not allow, naming it", async () => {
    const res = await runCli(
      [
        "oauth-client",
        "create",
        "--org",
        "devco",
        "--name",
        "Bad",
        "--redirect-uri",
        "http://gantt.example/cb",
        "--json",
      ],
      env,
    );
    expect(res.code).toBe(1);
    expect(res.stdout).toBe("");
    expect(res.stderr).toContain("redirect URI http://gantt.example/cb must use https");
  });

  it("refuses an unknown organisation and a missing redirect URI", async () => {
    const unknown = await runCli(
      [
        "oauth-client",
        "create",
        "--org",
        "nope",
        "--name",
        "X",
        "--redirect-uri",
        "https://x.example/cb",
      ],
      env,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("nope");
    const missing = await runCli(["oauth-client", "create", "--org", "devco", "--name", "X"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--redirect-uri");
  });
});

describe("svc grant", () => {
  it("lists the addons connected to an organisation and revokes one", async () => {
    const created = JSON.parse(
      (
        await runCli(
          [
            "oauth-client",
            "create",
            "--org",
            "devco",
            "--name",
            "Planner",
            "--redirect-uri",
            "https://planner.example/cb",
            "--json",
          ],
          env,
        )
      ).stdout,
    );
    const [client] = await t.db
      .select()
      .from(oauthClients)
      .where(eq(oauthClients.clientId, created.clientId));
    const code = await issueCode(t.db, {
      clientRecordId: client?.id as string,
      organization: fixtures.acme,
      redirectUri: "https://planner.example/cb",
      scopes: ["tasks:read", "projects:read"],
    });
    const token = await redeemCode(t.app, {
      code,
      redirectUri: "https://planner.example/cb",
      clientId: created.clientId,
      clientSecret: created.clientSecret,
    });
    const accessToken = token.json().access_token as string;

    const listed = await runCli(["grant", "list", "--org", "acme", "--json"], env);
    expect(listed.code).toBe(0);
    const grants = JSON.parse(listed.stdout);
    expect(grants).toEqual([
      {
        id: expect.any(String),
        clientId: created.clientId,
        clientName: "Planner",
        scopes: ["projects:read", "tasks:read"],
        createdAt: expect.stringMatching(/Z$/),
        revokedAt: null,
      },
    ]);
    expect(
      JSON.parse((await runCli(["grant", "list", "--org", "devco", "--json"], env)).stdout),
    ).toEqual([]);

    const revoked = await runCli(["grant", "revoke", "--id", grants[0].id], env);
    expect(revoked.stderr).toBe("");
    expect(revoked.code).toBe(0);
    expect((await api(t.app, "GET", "/api/v1/me", { token: accessToken })).status).toBe(401);
    const after = JSON.parse(
      (await runCli(["grant", "list", "--org", "acme", "--json"], env)).stdout,
    );
    expect(after[0].revokedAt).toMatch(/Z$/);

    const again = await runCli(["grant", "revoke", "--id", grants[0].id], env);
    expect(again.code).toBe(1);
    const malformed = await runCli(["grant", "revoke", "--id", "nope"], env);
    expect(malformed.code).toBe(2);
  });
});
