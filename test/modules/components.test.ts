import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { expectHiddenProjectsNotFound } from "../support/not-found.js";
import { expectTokenThenScope } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let token: string;

const version = (
  name: string,
  status: string,
  healthStatus = "ok",
  lifecycleStage = "production",
) => ({ version: name, status, lifecycleStage, healthStatus });

beforeAll(async () => {
  t = await createTestApp();
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        specs: [{ slug: "mass", name: "Mass" }],
        components: [
          {
            slug: "wheel",
            name: "Wheel",
            kind: "mechanical",
            dependsOn: ["spec:mass"],
            versions: [
              version("1.0", "published", "ok", "production"),
              version("1.1", "published", "stale", "validation"),
              version("2.0-draft", "draft", "blocked", "design"),
            ],
          },
          { slug: "chassis", name: "Chassis", versions: [version("0.1", "draft")] },
          { slug: "arm", name: "Arm" },
          {
            slug: "mast",
            name: "Mast",
            versions: [version("1", "published", "under-rated"), version("2", "retired", "ok")],
          },
          // Same name as "wheel": the slug breaks the tie.
          {
            slug: "a-wheel",
            name: "Wheel",
            versions: [version("9", "published", "blocked", "concept")],
          },
        ],
      }),
      project("empty"),
      project("secret", {
        visibility: "private",
        components: [{ slug: "hidden", name: "Hidden", versions: [version("1", "published")] }],
      }),
    ],
  });
  await importOrganization(t.db, "other", {
    projects: [project("foreign", { components: [{ slug: "theirs", name: "Theirs" }] })],
  });
  token = await mintToken(t.db, acme, ["components:read"]);
});
afterAll(() => t.close());

type ComponentBody = { slug: string; latest: unknown };

describe("GET /projects/{slug}/components", () => {
  it("lists components by name, then slug, with exactly the spec's fields", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/components", { token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((c: ComponentBody) => c.slug)).toEqual([
      "arm",
      "chassis",
      "mast",
      "a-wheel",
      "wheel",
    ]);
    expect(res.body.data.find((c: ComponentBody) => c.slug === "wheel")).toEqual({
      slug: "wheel",
      name: "Wheel",
      kind: "mechanical",
      latest: {
        version: "1.1",
        status: "published",
        lifecycleStage: "validation",
        healthStatus: "stale",
      },
    });
  });

  it("takes the latest version whose status is published, else null", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/components", { token });
    const bySlug = new Map(res.body.data.map((c: ComponentBody) => [c.slug, c]));
    expect(bySlug.get("arm")).toEqual({ slug: "arm", name: "Arm", kind: null, latest: null });
    expect(bySlug.get("chassis")).toMatchObject({ latest: null });
    // A later version with another status does not displace the published one.
    expect(bySlug.get("mast")).toMatchObject({
      latest: { version: "1", status: "published", healthStatus: "under-rated" },
    });
    expect(bySlug.get("a-wheel")).toMatchObject({
      latest: { version: "9", lifecycleStage: "concept", healthStatus: "blocked" },
    });
    expect(res.raw).not.toContain("2.0-draft");
  });

  it("answers an empty array for a project without components", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/empty/components", { token });
    expect(res.body).toEqual({ ok: true, data: [] });
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "/components");
  });

  it("needs a token, then components:read", async () => {
    await expectTokenThenScope(
      t,
      acme,
      "components:read",
      "GET",
      "/api/v1/projects/rover/components",
    );
  });
});
