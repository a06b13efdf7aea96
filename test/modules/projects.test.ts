import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { expectHiddenProjectsNotFound } from "../support/not-found.js";
import { expectInsufficientScope } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let token: string;

beforeAll(async () => {
  t = await createTestApp();
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        description: "Six wheels",
        startDate: "2026-01-05",
        targetDate: "2026-12-31",
      }),
      project("arm"),
      project("secret", { visibility: "private" }),
      project("beta", { name: "Arm" }),
    ],
  });
  await importOrganization(t.db, "other", { projects: [project("foreign")] });
  token = await mintToken(t.db, acme, ["projects:read"]);
});
afterAll(() => t.close());

describe("GET /projects", () => {
  it("lists the organisation's visible projects by name, then slug, with exactly the spec's fields", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects", { token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { slug: string }) => p.slug)).toEqual(["arm", "beta", "rover"]);
    expect(res.body.data[2]).toEqual({
      slug: "rover",
      name: "Rover",
      status: "active",
      visibility: "org",
      description: "Six wheels",
      startDate: "2026-01-05",
      targetDate: "2026-12-31",
    });
  });

  it("needs projects:read", async () => {
    const other = await mintToken(t.db, acme, ["tasks:read"]);
    expectInsufficientScope(await api(t.app, "GET", "/api/v1/projects", { token: other }));
  });
});

describe("GET /projects/{slug}", () => {
  it("returns the project with its id", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover", { token });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: acme.projects?.[0]?.id,
      slug: "rover",
      description: "Six wheels",
    });
  });

  it("answers private, foreign and unknown slugs with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "");
  });
});
