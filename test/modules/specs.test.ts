import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { expectHiddenProjectsNotFound } from "../support/not-found.js";
import { expectTokenThenScope } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let token: string;

const published = (version: string, value: unknown, publishedAt?: string) => ({
  version,
  status: "published",
  value,
  ...(publishedAt === undefined ? {} : { publishedAt }),
});
const draft = (version: string, value: unknown) => ({ version, status: "draft", value });

beforeAll(async () => {
  t = await createTestApp();
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        specs: [
          {
            slug: "mass",
            name: "Mass",
            kind: "physical",
            units: "kg",
            valueType: "number",
            versions: [
              published("1", 12.5, "2026-01-01T10:00:00Z"),
              published("2", 11.75, "2026-02-01T10:00:00.000Z"),
              draft("3", "DRAFT-ONLY-VALUE"),
            ],
          },
          // Published earlier in time but created later: creation order decides "latest".
          {
            slug: "limits",
            name: "Limits",
            versions: [
              published("a", { max: 3 }, "2026-05-01T00:00:00Z"),
              published("b", { max: [1, { deep: null }], label: "x" }, "2026-01-01T00:00:00Z"),
            ],
          },
          { slug: "drafts-only", name: "Drafts only", versions: [draft("0.1", { secret: 1 })] },
          { slug: "no-versions", name: "Bare" },
          { slug: "null-value", name: "Nullable", versions: [published("1", null)] },
          { slug: "array-value", name: "Listed", versions: [published("1", [1, "two", true])] },
          // Same name as "mass": the slug breaks the tie.
          { slug: "a-mass", name: "Mass", versions: [published("x", false)] },
        ],
      }),
      project("empty"),
      project("secret", {
        visibility: "private",
        specs: [{ slug: "hidden", name: "Hidden", versions: [published("1", 1)] }],
      }),
    ],
  });
  const other = await importOrganization(t.db, "other", {
    projects: [
      project("foreign", {
        specs: [{ slug: "theirs", name: "Theirs", versions: [published("1", 1)] }],
      }),
    ],
  });
  expect(other.projects).toHaveLength(1);
  token = await mintToken(t.db, acme, ["specs:read"]);
});
afterAll(() => t.close());

type SpecBody = { slug: string; latest: null | { version: string; value: unknown } };

describe("GET /projects/{slug}/specs", () => {
  it("lists specs by name, then slug, with exactly the spec's fields", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/specs", { token });
    expect(res.status).toBe(200);
    const slugs = res.body.data.map((spec: SpecBody) => spec.slug);
    expect(slugs).toEqual([
      "no-versions",
      "drafts-only",
      "limits",
      "array-value",
      "a-mass",
      "mass",
      "null-value",
    ]);
    const mass = res.body.data.find((spec: SpecBody) => spec.slug === "mass");
    expect(mass).toEqual({
      slug: "mass",
      name: "Mass",
      kind: "physical",
      units: "kg",
      valueType: "number",
      latest: {
        version: "2",
        status: "published",
        value: 11.75,
        publishedAt: "2026-02-01T10:00:00.000Z",
      },
    });
  });

  it("takes the latest published version by creation order and never shows drafts", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/specs", { token });
    const bySlug = new Map(res.body.data.map((spec: SpecBody) => [spec.slug, spec]));
    expect(bySlug.get("limits")).toMatchObject({
      kind: null,
      units: null,
      valueType: null,
      latest: { version: "b", value: { max: [1, { deep: null }], label: "x" } },
    });
    expect(bySlug.get("drafts-only")).toMatchObject({ latest: null });
    expect(bySlug.get("no-versions")).toMatchObject({ latest: null });
    expect(res.raw).not.toContain("DRAFT-ONLY-VALUE");
    expect(res.raw).not.toContain("secret");
  });

  it("returns any JSON value, including null, arrays and booleans", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/specs", { token });
    const bySlug = new Map(res.body.data.map((spec: SpecBody) => [spec.slug, spec]));
    const nullValue = bySlug.get("null-value") as SpecBody;
    expect(nullValue.latest).toEqual({
      version: "1",
      status: "published",
      value: null,
      // Imported without a publishedAt: the API shows none rather than making one up.
      publishedAt: null,
    });
    expect(bySlug.get("array-value")).toMatchObject({ latest: { value: [1, "two", true] } });
    expect(bySlug.get("a-mass")).toMatchObject({ latest: { value: false } });
  });

  it("answers an empty array for a project without specs", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/empty/specs", { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: [] });
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "/specs");
  });

  it("needs a token, then specs:read", async () => {
    const others = await expectTokenThenScope(
      t,
      acme,
      "specs:read",
      "GET",
      "/api/v1/projects/rover/specs",
    );
    // Scope is checked before the project: a private project does not turn 403 into 404.
    const hidden = await api(t.app, "GET", "/api/v1/projects/secret/specs", { token: others });
    expect(hidden.status).toBe(403);
  });
});
