import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.js";

type Operation = {
  operationId?: string;
  security?: Record<string, string[]>[];
  responses?: Record<string, unknown>;
};

/** Every API operation declares its scope, a success schema and its documented failures. */
let t: TestApp;
let paths: Record<string, Record<string, Operation>>;

beforeAll(async () => {
  t = await createTestApp();
  paths = (await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).json().paths;
});
afterAll(() => t.close());

describe("route declarations", () => {
  it("gives every operation an id, its security and the 200/401/429 responses", () => {
    const operations = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        name: `${method} ${path}`,
        operation,
      })),
    );
    expect(operations.length).toBeGreaterThan(1);
    for (const { name, operation } of operations) {
      expect(operation.operationId, `${name} operationId`).toBeTypeOf("string");
      expect(operation.security?.length, `${name} security`).toBeGreaterThan(0);
      const statuses = Object.keys(operation.responses ?? {});
      expect(statuses, name).toEqual(expect.arrayContaining(["200", "401", "429"]));
      const scopes =
        operation.security?.flatMap((requirement) => Object.values(requirement).flat()) ?? [];
      if (scopes.length > 0) expect(statuses, name).toContain("403");
    }
  });
});
