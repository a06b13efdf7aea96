import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allScopes } from "../../src/core/scopes.js";
import { createTestApp, type TestApp } from "../support/app.js";

let t: TestApp;
let document: any;

beforeAll(async () => {
  t = await createTestApp({ PUBLIC_URL: "https://workspace.acme.dev" });
  const res = await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" });
  expect(res.statusCode).toBe(200);
  document = res.json();
});
afterAll(() => t.close());

describe("the served OpenAPI document", () => {
  it("is OpenAPI 3.1.0, version 1.0.0, served from PUBLIC_URL without a token", () => {
    expect(document.openapi).toBe("3.1.0");
    expect(document.info.version).toBe("1.0.0");
    expect(document.servers).toEqual([{ url: "https://workspace.acme.dev/api/v1" }]);
    expect(Object.keys(document.paths)).toContain("/projects/{slug}");
  });

  it("keeps paths relative to the server when PUBLIC_URL has a path of its own", async () => {
    const based = await createTestApp({ PUBLIC_URL: "https://workspace.acme.dev/base/" });
    try {
      const served = (
        await based.app.inject({ method: "GET", url: "/api/v1/openapi.json" })
      ).json();
      expect(served.servers).toEqual([{ url: "https://workspace.acme.dev/base/api/v1" }]);
      expect(Object.keys(served.paths)).toContain("/projects/{slug}");
      expect(Object.keys(served.paths).some((path) => path.startsWith("/api/"))).toBe(false);
    } finally {
      await based.close();
    }
  });

  it("declares the bearer scheme and the authorization-code flow with all 13 scopes", () => {
    const { bearerAuth, oauth2 } = document.components.securitySchemes;
    expect(bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    const flow = oauth2.flows.authorizationCode;
    expect(flow.authorizationUrl).toBe("https://workspace.acme.dev/oauth/authorize");
    expect(flow.tokenUrl).toBe("https://workspace.acme.dev/api/v1/oauth/token");
    expect(Object.keys(flow.scopes).sort()).toEqual([...allScopes].sort());
  });

  it("is valid against the OpenAPI 3.1 schema", async () => {
    const result = await new Validator().validate(document);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it("lints cleanly with Redocly's recommended rules", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({
      source: JSON.stringify(document),
      absoluteRef: "openapi.json",
      config,
    });
    const summary = problems.map(
      (problem) =>
        `${problem.severity} ${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`,
    );
    expect(summary).toEqual([]);
  });

  it("serves the interactive reference at /api/v1/docs without a token", async () => {
    const res = await t.app.inject({ method: "GET", url: "/api/v1/docs" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/text\/html/);
    // Scripts are addressed absolutely, so the page works without a trailing slash, and none is
    // inline, so the CSP's `script-src 'self'` holds.
    const sources = [...res.body.matchAll(/<script([^>]*)>/g)].map((tag) => tag[1]?.trim());
    expect(sources).toEqual([
      'src="/api/v1/docs/js/scalar.js"',
      'src="/api/v1/docs/js/reference.js"',
    ]);
    const script = await t.app.inject({ method: "GET", url: "/api/v1/docs/js/scalar.js" });
    expect(script.statusCode).toBe(200);
    const mount = await t.app.inject({ method: "GET", url: "/api/v1/docs/js/reference.js" });
    expect(mount.statusCode).toBe(200);
    expect(mount.body).toContain('"url":"/api/v1/openapi.json"');
  });
});
