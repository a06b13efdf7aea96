import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";

/**
 * Every read costs the same few queries however many rows it returns (docs/api.md, "Reads"); the
 * token's principal is kept in the process after its first use, so it costs none.
 */
let t: TestApp;
let ws: Workspace;
let token: string;
let counting = false;
let queries = 0;

function times<T>(count: number, make: (i: number) => T): T[] {
  return Array.from({ length: count }, (_, i) => make(i));
}

function project(slug: string, size: number) {
  return {
    slug,
    name: slug,
    status: "active",
    visibility: "org",
    specs: times(size, (i) => ({
      slug: `spec-${i}`,
      name: `Spec ${i}`,
      versions: [
        { version: "1", status: "published", value: i },
        { version: "2", status: "draft", value: i + 1 },
      ],
    })),
    components: times(size, (i) => ({
      slug: `component-${i}`,
      name: `Component ${i}`,
      versions: [
        { version: "A", status: "published", lifecycleStage: "prototype", healthStatus: "ok" },
      ],
    })),
    milestones: times(size, (i) => ({
      name: `M${i}`,
      kind: "gate",
      status: "planned",
      targetDate: "2026-06-01",
    })),
    tasks: times(size, (i) => ({ title: `Task ${i}` })),
    pages: times(size, (i) => ({
      title: `Page ${i}`,
      markdown: "# Hi",
      children: [{ title: `Child ${i}` }],
    })),
    documents: times(size, (i) => ({
      category: "documentation",
      kind: "link",
      title: `Doc ${i}`,
      url: "https://example.com",
    })),
    meetings: times(size, (i) => ({
      startsAt: `2026-03-${String((i % 28) + 1).padStart(2, "0")}T10:00:00Z`,
      durationMinutes: 30,
      status: "done",
      locationType: "room",
      audience: "org",
      transcript: { status: "ready", text: "words ".repeat(100) },
    })),
  };
}

async function countQueries(url: string): Promise<number> {
  queries = 0;
  counting = true;
  const res = await api(t.app, "GET", url, { token });
  counting = false;
  expect(res.status, url).toBe(200);
  return queries;
}

beforeAll(async () => {
  const onQuery = () => {
    if (counting) queries += 1;
  };
  t = await createTestApp({}, { onQuery });
  ws = await importFixture(
    t.db,
    workspaceDocument("counts", { projects: [project("small", 2), project("large", 25)] }),
  );
  token = await mintToken(t.db, ws);
  await api(t.app, "GET", "/api/v1/me", { token });
});
afterAll(() => t.close());

describe("queries per request with a known token", () => {
  const collections: [string, number][] = [
    ["specs", 1],
    ["components", 1],
    ["milestones", 1],
    ["tasks", 1],
    ["pages", 1],
    ["documents", 1],
    ["meetings", 1],
  ];
  it.each(collections)(
    "GET /projects/{slug}/%s takes %i whatever its size",
    async (collection, expected) => {
      expect(await countQueries(`/api/v1/projects/small/${collection}`)).toBe(expected);
      expect(await countQueries(`/api/v1/projects/large/${collection}`)).toBe(expected);
    },
  );

  it("takes 1 for the organisation-wide lists and the single resources too", async () => {
    const page = ws.projects?.[1]?.pages?.[0]?.id;
    const meeting = ws.projects?.[1]?.meetings?.[0]?.id;
    for (const url of [
      "/api/v1/projects",
      "/api/v1/projects/large",
      "/api/v1/documents",
      "/api/v1/meetings",
      `/api/v1/pages/${page}`,
      `/api/v1/meetings/${meeting}`,
      `/api/v1/meetings/${meeting}/transcript`,
    ]) {
      expect(await countQueries(url), url).toBe(1);
    }
  });
});
