import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../src/db/client.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";

// The lists whose JSON Postgres writes (src/db/json-rows.ts) must answer the very bytes that
// JSON.stringify wrote for the same rows before (a spec's value aside: it comes as jsonb is written): same keys in the same order, same escapes, no
// spaces, timestamps cut to milliseconds. The expected bodies here are built in JavaScript from
// the tables, read without the service's code.

// Quotes, backslashes, control characters, non-ASCII, astral and separator characters.
const AWKWARD = [
  'quote " and backslash \\ and slash /',
  "tab\tnewline\ncarriage\rformfeed\fbackspace\b bell\u0007 unit\u001f del\u007f",
  "Zürich, 東京, emoji 🚀, line separator \u2028 and \u2029",
  "<script>alert('x')</script> & ampersand",
];

let t: TestApp;
let acme: Workspace;
let token: string;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  const meeting = (title: string, i: number) => ({
    title,
    startsAt: `2026-04-0${1 + (i % 3)}T09:00:00Z`,
    durationMinutes: 30 + i,
    status: "scheduled",
    locationType: "video",
    location: i === 0 ? null : title,
    audience: i === 3 ? "restricted" : "org",
    ...(i === 2 ? { minutesMarkdown: `# ${title}` } : {}),
  });
  acme = await importOrganization(t.db, "acme", {
    meetings: AWKWARD.map(meeting),
    documents: AWKWARD.map((title, i) => ({
      category: i % 2 === 0 ? "documentation" : "research",
      kind: i === 1 ? "file" : "link",
      title,
      description: i === 0 ? null : title,
      ...(i === 1
        ? { filename: title, byteSize: 2 ** 40, contentType: "application/pdf" }
        : { url: `https://example.com/${i}?q="a"&b=\\` }),
    })),
    projects: [
      project("rover", {
        description: AWKWARD[2],
        startDate: "2026-01-05",
        tasks: AWKWARD.map((title, i) => ({
          title: `T${i} ${title}`,
          description: i === 3 ? null : title,
          due_date: i % 2 === 0 ? "2026-06-01" : null,
        })),
        pages: AWKWARD.map((title, i) => ({
          title,
          children:
            i % 2 === 0
              ? [{ title: `${i}.1` }, { title: `${i}.2`, children: [{ title: "deep" }] }]
              : [],
        })),
        documents: AWKWARD.map((title) => ({
          category: "research",
          kind: "link",
          title,
          url: "https://example.com/r",
        })),
        milestones: AWKWARD.map((title, i) => ({
          name: title,
          kind: "review",
          status: "planned",
          targetDate: "2026-07-01",
          actualDate: i === 0 ? "2026-07-02" : null,
          description: i === 1 ? null : title,
        })),
        specs: AWKWARD.map((title, i) => ({
          slug: `spec-${i}`,
          name: title,
          units: i === 0 ? null : "mm",
          versions: [
            { version: "1", status: "published", value: i, publishedAt: "2026-02-01T10:00:00Z" },
            ...(i === 1
              ? [{ version: "2", status: "published", value: { at: title, n: [1.5, null] } }]
              : []),
            ...(i === 2 ? [{ version: "3", status: "draft", value: title }] : []),
          ].slice(0, i === 3 ? 0 : undefined),
        })),
        components: AWKWARD.map((title, i) => ({
          slug: `part-${i}`,
          name: title,
          kind: i === 0 ? null : "module",
          versions:
            i === 3
              ? []
              : [
                  {
                    version: `v${i}`,
                    status: "published",
                    lifecycleStage: title,
                    healthStatus: "ok",
                  },
                ],
        })),
        meetings: AWKWARD.map(meeting),
      }),
      project("lander", { name: AWKWARD[0] }),
      project("hidden", { visibility: "private" }),
    ],
  });
  token = await mintToken(t.db, acme);
  // Microseconds the API cuts to milliseconds, as Date#toISOString did.
  await t.db.execute(
    sql`update pages set updated_at = timestamptz '2026-03-02 08:00:00.123999+00'`,
  );
  await t.db.execute(
    sql`update documents set created_at = timestamptz '2026-03-01 12:34:56.789999+00' - (sequence || ' seconds')::interval`,
  );
});
afterAll(() => t?.close());

async function rows<T = Record<string, unknown>>(query: ReturnType<typeof sql>): Promise<T[]> {
  return rowsOf<T>(await t.db.execute(query));
}

async function expectBytes(url: string, data: unknown) {
  const response = await api(t.app, "GET", url, { token });
  expect(response.status, response.raw).toBe(200);
  expect(response.raw).toBe(JSON.stringify({ ok: true, data }));
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
}

describe("lists that Postgres writes as JSON", () => {
  it("answer the projects byte for byte as JSON.stringify writes them", async () => {
    // Columns under the API's names, in the order the API documents them.
    const projects = await rows(
      sql`select slug, name, status, visibility, description, start_date::text as "startDate",
            target_date::text as "targetDate"
          from projects where organization_id = ${acme.organization.id} and visibility = 'org'
          order by name, slug`,
    );
    expect(projects).toHaveLength(2);
    await expectBytes("/api/v1/projects", projects);
  });

  it("answer the tasks byte for byte as JSON.stringify writes them", async () => {
    const tasks = await rows(
      sql`select t.title, t.status, t.priority, t.due_date::text as "targetDate", t.description
          from tasks t join projects p on p.id = t.project_id
          where p.slug = 'rover' and p.organization_id = ${acme.organization.id}
          order by t.sequence`,
    );
    expect(tasks).toHaveLength(AWKWARD.length);
    await expectBytes("/api/v1/projects/rover/tasks", tasks);
    await expectBytes("/api/v1/projects/lander/tasks", []);
  });

  it("answer both document libraries byte for byte, filtered or not", async () => {
    const documentsOf = async (projectSlug: string | null, category: string | null) => {
      const found = await rows<Record<string, string | number | null>>(
        sql`select d.id, d.category, d.kind, d.title, d.description, d.url, d.filename,
              d.byte_size::float8 as byte_size, d.content_type, d.uploaded_by,
              floor(extract(epoch from d.created_at) * 1000)::float8 as created_ms
            from documents d left join projects p on p.id = d.project_id
            where d.organization_id = ${acme.organization.id}
              and (p.slug is not distinct from ${projectSlug}::text)
              and (${category}::text is null or d.category::text = ${category})
            order by d.created_at desc, d.sequence desc`,
      );
      return found.map((d) => ({
        id: d.id,
        category: d.category,
        kind: d.kind,
        title: d.title,
        description: d.description,
        url: d.url,
        filename: d.filename,
        byteSize: d.byte_size,
        contentType: d.content_type,
        uploadedBy: d.uploaded_by,
        createdAt: new Date(Number(d.created_ms)).toISOString(),
      }));
    };
    const team = await documentsOf(null, null);
    expect(team).toHaveLength(AWKWARD.length);
    for (const document of team) expect(document.createdAt).toMatch(/T12:34:\d\d\.789Z$/);
    await expectBytes("/api/v1/documents", team);
    await expectBytes("/api/v1/documents?category=research", await documentsOf(null, "research"));
    await expectBytes("/api/v1/projects/rover/documents", await documentsOf("rover", null));
    await expectBytes("/api/v1/projects/rover/documents?category=documentation", []);
  });

  it("answer the page tree byte for byte, depth-first in sibling order", async () => {
    type Row = {
      id: string;
      parent_id: string | null;
      title: string;
      position: number;
      updated_ms: number;
    };
    const all = await rows<Row>(
      sql`select pg.id, pg.parent_id, pg.title, pg.position,
            floor(extract(epoch from pg.updated_at) * 1000)::float8 as updated_ms
          from pages pg join projects p on p.id = pg.project_id
          where p.slug = 'rover' and p.organization_id = ${acme.organization.id}
          order by pg.position, pg.sequence`,
    );
    const ordered: Row[] = [];
    const visit = (parent: string | null) => {
      for (const page of all.filter((row) => row.parent_id === parent)) {
        ordered.push(page);
        visit(page.id);
      }
    };
    visit(null);
    expect(ordered).toHaveLength(AWKWARD.length + 2 * 3);
    await expectBytes(
      "/api/v1/projects/rover/pages",
      ordered.map((page) => ({
        id: page.id,
        parentId: page.parent_id,
        title: page.title,
        position: page.position,
        updatedAt: new Date(Number(page.updated_ms)).toISOString(),
      })),
    );
    expect(ordered[0]?.title).toBe(AWKWARD[0]);
    await expectBytes("/api/v1/projects/lander/pages", []);
  });

  it("answer the milestones byte for byte, by target date, name and creation order", async () => {
    const milestones = await rows(
      sql`select m.name, m.kind, m.status, m.target_date::text as "targetDate",
            m.actual_date::text as "actualDate", m.description
          from milestones m join projects p on p.id = m.project_id
          where p.slug = 'rover' and p.organization_id = ${acme.organization.id}
          order by m.target_date, m.name, m.sequence`,
    );
    expect(milestones).toHaveLength(AWKWARD.length);
    await expectBytes("/api/v1/projects/rover/milestones", milestones);
    await expectBytes("/api/v1/projects/lander/milestones", []);
  });

  it("answer the components byte for byte, each with its latest published version", async () => {
    const components = await rows<Record<string, unknown>>(
      sql`select c.slug, c.name, c.kind, v.version, v.status, v.lifecycle_stage, v.health_status
          from components c join projects p on p.id = c.project_id
            left join component_versions v on v.component_id = c.id
          where p.slug = 'rover' and p.organization_id = ${acme.organization.id}
          order by c.name, c.slug`,
    );
    expect(components).toHaveLength(AWKWARD.length);
    await expectBytes(
      "/api/v1/projects/rover/components",
      components.map((c) => ({
        slug: c.slug,
        name: c.name,
        kind: c.kind,
        latest:
          c.version === null
            ? null
            : {
                version: c.version,
                status: c.status,
                lifecycleStage: c.lifecycle_stage,
                healthStatus: c.health_status,
              },
      })),
    );
    await expectBytes("/api/v1/projects/lander/components", []);
  });

  it("answer the specs with their latest published value, drafts left out", async () => {
    const response = await api(t.app, "GET", "/api/v1/projects/rover/specs", { token });
    expect(response.status, response.raw).toBe(200);
    const published = (version: string, value: unknown, publishedAt: string | null) => ({
      version,
      status: "published",
      value,
      publishedAt,
    });
    const at = "2026-02-01T10:00:00.000Z";
    const bySlug = new Map(
      (response.body.data as { slug: string; latest: unknown }[]).map((spec) => [spec.slug, spec]),
    );
    expect(bySlug.get("spec-0")).toEqual({
      slug: "spec-0",
      name: AWKWARD[0],
      kind: null,
      units: null,
      valueType: null,
      latest: published("1", 0, at),
    });
    expect(bySlug.get("spec-1")?.latest).toEqual(
      published("2", { at: AWKWARD[1], n: [1.5, null] }, null),
    );
    expect(bySlug.get("spec-2")?.latest).toEqual(published("1", 2, at));
    expect(bySlug.get("spec-3")?.latest).toBeNull();
    // A value is written as Postgres writes jsonb; every other byte as JSON.stringify writes it.
    expect(response.raw).toContain(`"latest":{"version":"1","status":"published","value":0,`);
    await expectBytes("/api/v1/projects/lander/specs", []);
  });

  it("answer both meeting lists byte for byte, newest first, restricted ones left out", async () => {
    const meetingsOf = async (projectSlug: string | null, from: string | null) => {
      const found = await rows<Record<string, unknown>>(
        sql`select m.id, m.title, floor(extract(epoch from m.starts_at) * 1000)::float8 as starts_ms,
              m.duration_minutes, m.status, m.location_type, m.location, m.minutes_text
            from meetings m left join projects p on p.id = m.project_id
            where m.organization_id = ${acme.organization.id} and m.audience = 'org'
              and (${projectSlug}::text is null or p.slug = ${projectSlug})
              and (${from}::timestamptz is null or m.starts_at >= ${from}::timestamptz)
            order by m.starts_at desc, m.id`,
      );
      return found.map((m) => ({
        id: m.id,
        title: m.title,
        startsAt: new Date(Number(m.starts_ms)).toISOString(),
        durationMinutes: m.duration_minutes,
        status: m.status,
        locationType: m.location_type,
        location: m.location,
        hasMinutes: m.minutes_text !== "",
      }));
    };
    await t.db.execute(
      sql`update meetings set starts_at = starts_at + interval '0.456789 seconds'`,
    );
    const all = await meetingsOf(null, null);
    expect(all).toHaveLength(2 * (AWKWARD.length - 1));
    expect(all.filter((m) => m.hasMinutes)).toHaveLength(2);
    expect(all[0]?.startsAt).toMatch(/\.456Z$/);
    await expectBytes("/api/v1/meetings", all);
    await expectBytes("/api/v1/meetings?from=2026-04-02", await meetingsOf(null, "2026-04-02"));
    await expectBytes("/api/v1/projects/rover/meetings", await meetingsOf("rover", null));
    await expectBytes("/api/v1/projects/lander/meetings", []);
  });

  it("still answer 404 for a private or unknown project", async () => {
    for (const url of [
      "/api/v1/projects/hidden/tasks",
      "/api/v1/projects/nowhere/documents",
      "/api/v1/projects/hidden/specs",
      "/api/v1/projects/hidden/components",
      "/api/v1/projects/hidden/milestones",
      "/api/v1/projects/hidden/meetings",
    ]) {
      const response = await api(t.app, "GET", url, { token });
      expect(response.status).toBe(404);
    }
  });
});
