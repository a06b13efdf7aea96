import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../src/db/client.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";

// The lists whose JSON Postgres writes (src/db/json-rows.ts) must answer the very bytes that
// JSON.stringify wrote for the same rows before: same keys in the same order, same escapes, no
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
  acme = await importOrganization(t.db, "acme", {
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

  it("still answer 404 for a private or unknown project", async () => {
    for (const url of ["/api/v1/projects/hidden/tasks", "/api/v1/projects/nowhere/documents"]) {
      const response = await api(t.app, "GET", url, { token });
      expect(response.status).toBe(404);
    }
  });
});
