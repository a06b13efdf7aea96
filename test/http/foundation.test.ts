import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { openPostgres } from "../../src/db/postgres.js";
import { apiTokens } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken, revokeToken } from "../../src/modules/tokens/service.js";
import { removeMember } from "../../src/modules/users/service.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { eventually } from "../support/eventually.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";

let t: TestApp;
let acme: Workspace;
let token: string;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "1000" });
  acme = await importFixture(t.db, workspaceDocument("acme"));
  token = await mintToken(t.db, acme);
});
afterAll(() => t.close());

describe("GET /me", () => {
  it("returns the organisation, scopes and a null pluginId for a minted token", async () => {
    const limited = await mintToken(t.db, acme, ["tasks:read"]);
    const res = await api(t.app, "GET", "/api/v1/me", { token: limited });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      data: {
        organization: { id: acme.organization.id, slug: "acme", name: "Org acme" },
        scopes: ["tasks:read"],
        pluginId: null,
      },
    });
  });
});

describe("bearer authentication", () => {
  const cases: [string, Record<string, string>][] = [
    ["no header", {}],
    ["another scheme", { authorization: "Basic abc" }],
    ["a malformed token", { authorization: "Bearer nope" }],
    ["an unknown token", { authorization: `Bearer svc_live_${"a".repeat(43)}` }],
  ];
  it.each(cases)(
    "answers 401 invalid_token with WWW-Authenticate for %s",
    async (_name, headers) => {
      const res = await api(t.app, "GET", "/api/v1/me", { headers });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ ok: false, error: "invalid_token" });
      expect(res.headers["www-authenticate"]).toMatch(/^Bearer /);
    },
  );

  it("refuses a revoked token", async () => {
    const { id, token: revoked } = await createToken(t.db, systemAudit, {
      organizationId: acme.organization.id,
      userId: acme.users[0]!.id,
      scopes: ["projects:read"],
    });
    expect((await api(t.app, "GET", "/api/v1/me", { token: revoked })).status).toBe(200);
    // Revoked by another process (as `svc token revoke` does): the instance hears of it.
    expect(await revokeToken(t.db, systemAudit, { tokenId: id })).toBe(true);
    const res = await eventually(async () => {
      const answer = await api(t.app, "GET", "/api/v1/me", { token: revoked });
      return answer.status === 401 ? answer : null;
    });
    expect(res.body.error).toBe("invalid_token");
  });

  it("refuses an expired token", async () => {
    const { id, token: expiring } = await createToken(t.db, systemAudit, {
      organizationId: acme.organization.id,
      userId: acme.users[0]!.id,
      scopes: ["projects:read"],
      expiresAt: new Date(Date.now() + 60_000),
    });
    expect((await api(t.app, "GET", "/api/v1/me", { token: expiring })).status).toBe(200);
    await t.db.execute(
      sql`update ${apiTokens} set expires_at = now() - interval '1 second' where id = ${id}`,
    );
    await eventually(
      async () => (await api(t.app, "GET", "/api/v1/me", { token: expiring })).status === 401,
    );
  });

  it("keeps a token whose creator left able to read, with no author", async () => {
    const ws = await importFixture(t.db, workspaceDocument("leavers"));
    const leaverToken = await mintToken(t.db, ws, ["projects:read"], 1);
    await removeMember(t.db, systemAudit, { orgSlug: "leavers", email: "member@leavers.example" });
    const res = await api(t.app, "GET", "/api/v1/me", { token: leaverToken });
    expect(res.status).toBe(200);
  });
});

describe("envelope and errors", () => {
  it("answers an unknown path with 404 not_found whatever the token", async () => {
    for (const options of [{}, { token }]) {
      const res = await api(t.app, "GET", "/api/v1/nothing-here", options);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ ok: false, error: "not_found", message: expect.any(String) });
    }
  });

  it("echoes a sent X-Request-Id and generates one otherwise", async () => {
    const sent = await api(t.app, "GET", "/api/v1/me", {
      token,
      headers: { "x-request-id": "req-123" },
    });
    expect(sent.headers["x-request-id"]).toBe("req-123");
    const generated = await api(t.app, "GET", "/api/v1/me", { token });
    expect(generated.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    const forged = await api(t.app, "GET", "/api/v1/me", {
      token,
      headers: { "x-request-id": "a\u00e9 b" },
    });
    expect(forged.headers["x-request-id"]).not.toBe("a\u00e9 b");
  });

  it("sends RateLimit headers on every API response, refusals included", async () => {
    const limited = await mintToken(t.db, acme, ["tasks:read"]);
    const responses = [
      await api(t.app, "GET", "/api/v1/me", { token }),
      await api(t.app, "GET", "/api/v1/projects"),
      await api(t.app, "GET", "/api/v1/projects", { token: limited }),
      await api(t.app, "GET", "/api/v1/nothing-here", { token }),
    ];
    expect(responses.map((res) => res.status)).toEqual([200, 401, 403, 404]);
    for (const res of responses) {
      expect(res.headers["ratelimit-limit"]).toBe("1000");
      expect(Number(res.headers["ratelimit-remaining"])).toBeLessThan(1000);
      expect(res.headers["ratelimit-reset"]).toBeDefined();
    }
  });
});

describe("health", () => {
  it("reports liveness and readiness", async () => {
    expect((await t.app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    const ready = await t.app.inject({ method: "GET", url: "/readyz" });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: "ok", checks: { database: "ok" } });
  });

  it("answers 503 on /readyz while the database is unreachable", async () => {
    const unreachable = openPostgres("postgres://postgres@127.0.0.1:1/none");
    const app = await buildApp({
      config: t.config,
      database: unreachable,
      logger: pino({ level: "silent" }),
      queue: t.app.queue,
    });
    try {
      const ready = await app.inject({ method: "GET", url: "/readyz" });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({ status: "unavailable", checks: { database: "unavailable" } });
      expect((await app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    } finally {
      await app.close();
      await unreachable.close();
    }
  });
});
