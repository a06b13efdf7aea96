import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { expectHiddenProjectsNotFound } from "../support/not-found.js";
import { expectTokenThenScope } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let token: string;

const milestone = (name: string, targetDate: string, extra: Record<string, unknown> = {}) => ({
  name,
  kind: "review",
  status: "planned",
  targetDate,
  ...extra,
});

beforeAll(async () => {
  t = await createTestApp();
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        milestones: [
          milestone("Launch", "2026-09-01"),
          milestone("Review", "2026-03-01", { description: "first of two" }),
          milestone("CDR", "2026-03-01", {
            kind: "gate",
            status: "done",
            actualDate: "2026-02-27",
            description: "Critical design review",
          }),
          milestone("Review", "2026-03-01", { description: "second of two" }),
          milestone("Kickoff", "2025-12-01"),
        ],
      }),
      project("empty"),
      project("secret", {
        visibility: "private",
        milestones: [milestone("Hidden", "2026-01-01")],
      }),
    ],
  });
  await importOrganization(t.db, "other", {
    projects: [project("foreign", { milestones: [milestone("Theirs", "2026-01-01")] })],
  });
  token = await mintToken(t.db, acme, ["milestones:read"]);
});
afterAll(() => t.close());

describe("GET /projects/{slug}/milestones", () => {
  it("orders by target date, then name, then creation order, with exactly the spec's fields", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/milestones", { token });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        name: "Kickoff",
        kind: "review",
        status: "planned",
        targetDate: "2025-12-01",
        actualDate: null,
        description: null,
      },
      {
        name: "CDR",
        kind: "gate",
        status: "done",
        targetDate: "2026-03-01",
        actualDate: "2026-02-27",
        description: "Critical design review",
      },
      expect.objectContaining({ name: "Review", description: "first of two" }),
      expect.objectContaining({ name: "Review", description: "second of two" }),
      expect.objectContaining({ name: "Launch", targetDate: "2026-09-01" }),
    ]);
  });

  it("answers an empty array for a project without milestones", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/empty/milestones", { token });
    expect(res.body).toEqual({ ok: true, data: [] });
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "/milestones");
  });

  it("needs a token, then milestones:read", async () => {
    await expectTokenThenScope(
      t,
      acme,
      "milestones:read",
      "GET",
      "/api/v1/projects/rover/milestones",
    );
  });
});
