import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allScopes, type Scope } from "../../src/core/scopes.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";

type Operation = { security?: Record<string, string[]>[] };

let t: TestApp;
let ws: Workspace;
let operations: { method: "GET" | "POST" | "PATCH"; url: string; scope: Scope | null }[];

function concrete(template: string): string {
  return `/api/v1${template.replace("{slug}", "p").replace(/\{[a-z_]+_id\}/g, randomUUID())}`;
}

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "10000" });
  ws = await importFixture(
    t.db,
    workspaceDocument("scopes", {
      projects: [{ slug: "p", name: "P", status: "active", visibility: "org" }],
    }),
  );
  const paths: Record<string, Record<string, Operation>> = (
    await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })
  ).json().paths;
  operations = Object.entries(paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase() as "GET" | "POST" | "PATCH",
      url: concrete(template),
      scope: (operation.security?.[0]?.bearerAuth?.[0] as Scope | undefined) ?? null,
    })),
  );
});
afterAll(() => t.close());

describe("the scope matrix, over every documented operation", () => {
  it("refuses each operation with 403 insufficient_scope to a token holding every other scope", async () => {
    const scoped = operations.filter((operation) => operation.scope !== null);
    expect(scoped.length).toBeGreaterThanOrEqual(20);
    for (const { method, url, scope } of scoped) {
      const token = await mintToken(
        t.db,
        ws,
        allScopes.filter((other) => other !== scope),
      );
      const res = await api(t.app, method, url, { token, body: method === "GET" ? undefined : {} });
      expect(res.status, `${method} ${url} without ${scope}`).toBe(403);
      expect(res.body.error).toBe("insufficient_scope");
    }
  });

  it("lets each operation past the scope check with only its own scope", async () => {
    for (const { method, url, scope } of operations) {
      const token = await mintToken(t.db, ws, scope === null ? [] : [scope]);
      const res = await api(t.app, method, url, { token, body: method === "GET" ? undefined : {} });
      expect([401, 403], `${method} ${url} with ${scope}`).not.toContain(res.status);
    }
  });

  it("serves the OpenAPI document and the reference without a token", async () => {
    expect((await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).statusCode).toBe(
      200,
    );
    expect((await t.app.inject({ method: "GET", url: "/api/v1/docs/" })).statusCode).toBe(200);
  });
});
