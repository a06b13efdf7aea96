import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Scope } from "../../src/core/scopes.js";
import { changeEvents, documents } from "../../src/db/schema/index.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { eventsFor, whileBoomEventsFail } from "../support/change-events.js";
import {
  formerMemberToken,
  importOrganization,
  mintToken,
  project,
  type Workspace,
} from "../support/fixtures.js";
import { expectInvalidRequest } from "../support/invalid-request.js";
import {
  expectHiddenProjectsNotFound,
  expectOneNotFoundBody,
  NOT_FOUND_BODY,
} from "../support/not-found.js";
import { countRows } from "../support/row-counts.js";
import { expectInsufficientScope, tokenWithout } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let other: Workspace;
/** Every scope, as Ada (user 0). */
let token: string;
/** Documents scopes, as Max (user 1). */
let maxToken: string;

const link = (title: string, extra: Record<string, unknown> = {}) => ({
  category: "documentation",
  kind: "link",
  title,
  url: `https://example.com/${encodeURIComponent(title)}`,
  ...extra,
});

const adaId = () => acme.users[0]!.id;
const maxId = () => acme.users[1]!.id;
const teamDoc = (title: string) => acme.documents.find((d) => d.title === title)!;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    documents: [
      link("Handbook", { description: "How we work" }),
      {
        category: "research",
        kind: "file",
        title: "Survey results",
        filename: "survey.pdf",
        byteSize: 123456,
        contentType: "application/pdf",
      },
      link("Competitor study", { category: "research" }),
    ],
    projects: [
      project("rover", {
        documents: [link("Rover datasheet"), link("Rover paper", { category: "research" })],
      }),
      project("secret", { visibility: "private", documents: [link("Secret plan")] }),
      project("arm"),
    ],
  });
  other = await importOrganization(t.db, "other", {
    documents: [link("Their handbook")],
    projects: [project("foreign", { documents: [link("Their datasheet")] })],
  });
  token = await mintToken(t.db, acme);
  maxToken = await mintToken(t.db, acme, ["documents:read", "documents:write"], 1);
});
afterAll(() => t.close());

type Doc = { id: string; title: string; category: string };

const list = async (url: string, tok = token) => {
  const res = await api(t.app, "GET", url, { token: tok });
  expect(res.status).toBe(200);
  return res.body.data as Doc[];
};

const post = (url: string, body: unknown, tok = token) =>
  api(t.app, "POST", url, { token: tok, body });

const patch = (id: string, body: unknown, tok = token) =>
  api(t.app, "PATCH", `/api/v1/documents/${id}`, { token: tok, body });

const counts = () => countRows(t.db, { documents, events: changeEvents });

async function documentRow(id: string) {
  const [row] = await t.db.select().from(documents).where(eq(documents.id, id));
  return row!;
}

async function newLink(body: Record<string, unknown> = {}, url = "/api/v1/documents") {
  const res = await post(url, { title: "Scratch", url: "https://example.com/s", ...body });
  expect(res.status).toBe(200);
  return res.body.data.id as string;
}

describe("GET /documents", () => {
  it("lists the team-level library only, with exactly the Document fields", async () => {
    const data = await list("/api/v1/documents");
    expect(data.map((d) => d.title).sort()).toEqual(
      ["Competitor study", "Handbook", "Survey results"].sort(),
    );
    expect(data.find((d) => d.title === "Survey results")).toEqual({
      id: teamDoc("Survey results").id,
      category: "research",
      kind: "file",
      title: "Survey results",
      description: null,
      url: null,
      filename: "survey.pdf",
      byteSize: 123456,
      contentType: "application/pdf",
      uploadedBy: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    expect(data.find((d) => d.title === "Handbook")).toEqual({
      id: teamDoc("Handbook").id,
      category: "documentation",
      kind: "link",
      title: "Handbook",
      description: "How we work",
      url: "https://example.com/Handbook",
      filename: null,
      byteSize: null,
      contentType: null,
      uploadedBy: null,
      createdAt: expect.any(String),
    });
  });

  it("filters by category and refuses any other value, naming category", async () => {
    expect((await list("/api/v1/documents?category=research")).map((d) => d.title).sort()).toEqual([
      "Competitor study",
      "Survey results",
    ]);
    expect(
      (await list("/api/v1/documents?category=documentation")).every(
        (d) => d.category === "documentation",
      ),
    ).toBe(true);
    for (const query of [
      "category=file",
      "category=",
      "category=Research",
      "category=research&category=documentation",
    ]) {
      const res = await api(t.app, "GET", `/api/v1/documents?${query}`, { token });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.message).toMatch(/^category: /);
    }
  });

  it("ignores unknown query parameters", async () => {
    const all = await list("/api/v1/documents");
    expect(await list("/api/v1/documents?page=2&sort=title")).toEqual(all);
  });
});

describe("GET /projects/{slug}/documents", () => {
  it("lists the project's library only", async () => {
    const data = await list("/api/v1/projects/rover/documents");
    expect(data.map((d) => d.title).sort()).toEqual(["Rover datasheet", "Rover paper"]);
    expect(await list("/api/v1/projects/rover/documents?category=research")).toEqual([
      expect.objectContaining({ title: "Rover paper", category: "research", kind: "link" }),
    ]);
    expect(await list("/api/v1/projects/arm/documents")).toEqual([]);
    const bad = await api(t.app, "GET", "/api/v1/projects/rover/documents?category=x", { token });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^category: /);
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "/documents");
  });
});

describe("list order", () => {
  it("is newest first, the last filed first among equal times", async () => {
    const ws = await importOrganization(t.db, "order", {
      documents: [link("A"), link("B"), link("C"), link("D")],
      projects: [project("p", { documents: [link("P1"), link("P2"), link("P3")] })],
    });
    const byTitle = new Map(
      [...ws.documents, ...ws.projects[0]!.documents].map((d) => [d.title, d.id]),
    );
    const setCreated = (title: string, at: string) =>
      t.db
        .update(documents)
        .set({ createdAt: new Date(at) })
        .where(eq(documents.id, byTitle.get(title)!));
    await setCreated("A", "2026-03-01T00:00:00Z");
    await setCreated("B", "2026-01-01T00:00:00Z");
    // C and D share a time: D was filed after C.
    await setCreated("C", "2026-02-01T00:00:00Z");
    await setCreated("D", "2026-02-01T00:00:00Z");
    await setCreated("P1", "2026-05-01T00:00:00Z");
    const orderToken = await mintToken(t.db, ws, ["documents:read"]);
    const titles = async (url: string) => (await list(url, orderToken)).map((d) => d.title);
    expect(await titles("/api/v1/documents")).toEqual(["A", "D", "C", "B"]);
    // P2 and P3 keep the import time (later than May 2026 is not guaranteed): compare relatively.
    const project_ = await titles("/api/v1/projects/p/documents");
    expect(project_.indexOf("P3")).toBeLessThan(project_.indexOf("P2"));
    expect(project_).toHaveLength(3);
  });

  it("puts a newly filed link first", async () => {
    const id = await newLink({ title: "Brand new" });
    expect((await list("/api/v1/documents"))[0]!.id).toBe(id);
  });
});

describe("scopes", () => {
  const handbook = () => teamDoc("Handbook").id;
  const body = { title: "Scoped", url: "https://example.com/scoped" };
  const routes: [string, "GET" | "POST" | "PATCH", () => string, Scope, unknown][] = [
    ["team list", "GET", () => "/api/v1/documents", "documents:read", undefined],
    ["project list", "GET", () => "/api/v1/projects/rover/documents", "documents:read", undefined],
    ["team create", "POST", () => "/api/v1/documents", "documents:write", body],
    ["project create", "POST", () => "/api/v1/projects/rover/documents", "documents:write", body],
    ["edit", "PATCH", () => `/api/v1/documents/${handbook()}`, "documents:write", {}],
  ];
  it.each(routes)("%s needs its scope", async (_name, method, url, scope, requestBody) => {
    const without = await tokenWithout(t, acme, scope, [
      "documents:read",
      "documents:write",
      "pages:read",
      "pages:write",
      "projects:read",
    ]);
    expectInsufficientScope(await api(t.app, method, url(), { token: without, body: requestBody }));
    const granted = await mintToken(t.db, acme, [scope]);
    expect((await api(t.app, method, url(), { token: granted, body: requestBody })).status).toBe(
      200,
    );
  });
});

describe("POST /documents and /projects/{slug}/documents", () => {
  it("files a link in the team library, attributed to the author", async () => {
    const res = await post(
      "/api/v1/documents",
      { title: "Style guide", url: "https://example.com/style", description: "Fonts" },
      maxToken,
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: expect.any(String) });
    const id = res.body.data.id;
    const listed = (await list("/api/v1/documents")).find((d) => d.id === id);
    expect(listed).toEqual({
      id,
      category: "documentation",
      kind: "link",
      title: "Style guide",
      description: "Fonts",
      url: "https://example.com/style",
      filename: null,
      byteSize: null,
      contentType: null,
      uploadedBy: maxId(),
      createdAt: expect.any(String),
    });
    expect((await documentRow(id)).projectId).toBeNull();
    expect(await eventsFor(t.db, id)).toEqual([
      {
        organizationId: acme.organization.id,
        type: "document.created",
        action: "created",
        targetKind: "document",
        targetId: id,
        actorId: maxId(),
        diff: {
          before: {},
          after: {
            category: "documentation",
            kind: "link",
            title: "Style guide",
            description: "Fonts",
            url: "https://example.com/style",
          },
        },
      },
    ]);
  });

  it("files a link in a project library, not in the team library", async () => {
    const id = await newLink(
      { title: "Arm paper", category: "research", url: "http://example.org/a?b=c#d" },
      "/api/v1/projects/arm/documents",
    );
    expect(await list("/api/v1/projects/arm/documents")).toEqual([
      expect.objectContaining({ id, category: "research", uploadedBy: adaId(), description: null }),
    ]);
    expect((await list("/api/v1/documents")).some((d) => d.id === id)).toBe(false);
    expect((await documentRow(id)).projectId).toBe(acme.projects[2]!.id);
  });

  it("accepts a null description as none", async () => {
    const id = await newLink({ description: null });
    expect((await documentRow(id)).description).toBeNull();
  });

  it("keeps title within 1 to 200 and description within 2000 characters", async () => {
    await newLink({ title: "t".repeat(200), description: "d".repeat(2000) });
    await newLink({ title: "t" });
    const before = await counts();
    const cases: [Record<string, unknown>, string][] = [
      [{ title: "t".repeat(201) }, "title"],
      [{ title: "" }, "title"],
      [{ title: null }, "title"],
      [{ description: "d".repeat(2001) }, "description"],
      [{ description: 5 }, "description"],
      [{ category: "file" }, "category"],
      [{ category: null }, "category"],
    ];
    for (const [fields, field] of cases) {
      const res = await post("/api/v1/documents", {
        title: "Valid",
        url: "https://example.com",
        ...fields,
      });
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(res.body.message).toMatch(new RegExp(`^${field}: `));
    }
    expect(await counts()).toEqual(before);
  });

  it("requires an absolute http(s) URL", async () => {
    for (const url of [
      "http://example.com",
      "HTTPS://Example.com/Path?q=1",
      "https://127.0.0.1:8080/x",
    ]) {
      expect((await documentRow(await newLink({ url }))).url).toBe(url);
    }
    // Surrounding whitespace, tabs and newlines are dropped, as browsers do (WHATWG URL).
    for (const url of [" https://example.com/padded ", "https://example.com/padded\n"]) {
      const id = await newLink({ url });
      expect((await documentRow(id)).url).toMatch(/^https:\/\/example\.com\/padded$/);
    }
    const before = await counts();
    for (const url of [
      "javascript:alert(1)",
      "ftp://example.com/file",
      "mailto:someone@example.com",
      "data:text/html,hi",
      "file:///etc/passwd",
      "/relative/path",
      "example.com",
      "//example.com/x",
      "http://",
      "http:example.com",
      "https://exa mple.com",
      "https://example.com/a b",
      "",
      null,
      42,
    ]) {
      const res = await post("/api/v1/documents", { title: "Bad link", url });
      expect(res.status, String(url)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.message).toMatch(/^url: /);
    }
    const missing = await post("/api/v1/documents", { title: "No link" });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/^url: /);
    expect(await counts()).toEqual(before);
  });

  it("refuses unknown fields, so files, ids and authors cannot be set", async () => {
    for (const field of [
      "kind",
      "filename",
      "byteSize",
      "contentType",
      "uploadedBy",
      "id",
      "projectId",
    ]) {
      const res = await post("/api/v1/documents", {
        title: "Sneaky",
        url: "https://example.com",
        [field]: "x",
      });
      expectInvalidRequest(res, `${field}: unknown field`);
    }
  });

  it("answers 404 for a private, foreign or unknown project, after validating the body", async () => {
    const before = await counts();
    for (const slug of ["secret", "foreign", "nowhere"]) {
      const url = `/api/v1/projects/${slug}/documents`;
      expect((await post(url, { title: "In vain", url: "https://example.com" })).status).toBe(404);
      expect((await post(url, { title: "In vain", url: "ftp://x" })).status).toBe(400);
    }
    expect(await counts()).toEqual(before);
  });

  it("refuses a token whose creator left the organisation, writing nothing", async () => {
    const { token: leaver } = await formerMemberToken(
      t.db,
      "leavers",
      { projects: [project("gone")] },
      ["documents:read", "documents:write"],
    );
    const before = await counts();
    for (const url of ["/api/v1/documents", "/api/v1/projects/gone/documents"]) {
      const res = await post(url, { title: "Ghost", url: "https://example.com" }, leaver);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/author/i);
    }
    expect(await counts()).toEqual(before);
    expect((await api(t.app, "GET", "/api/v1/documents", { token: leaver })).status).toBe(200);
  });
});

describe("PATCH /documents/{document_id}", () => {
  it("changes only the fields sent and records the changed ones", async () => {
    const id = await newLink({ title: "Draft", description: "First" });
    const res = await patch(id, { title: "Final" }, maxToken);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id });
    expect(await documentRow(id)).toMatchObject({
      title: "Final",
      description: "First",
      url: "https://example.com/s",
      uploadedBy: adaId(),
    });
    expect((await patch(id, { description: "Second" })).status).toBe(200);
    expect(await documentRow(id)).toMatchObject({ title: "Final", description: "Second" });
    const events = await eventsFor(t.db, id);
    expect(events.map((e) => e.type)).toEqual([
      "document.created",
      "document.updated",
      "document.updated",
    ]);
    expect(events[1]).toEqual({
      organizationId: acme.organization.id,
      type: "document.updated",
      action: "updated",
      targetKind: "document",
      targetId: id,
      actorId: maxId(),
      diff: { before: { title: "Draft" }, after: { title: "Final" } },
    });
    expect(events[2]!.diff).toEqual({
      before: { description: "First" },
      after: { description: "Second" },
    });
  });

  it("clears the description with null", async () => {
    const id = await newLink({ description: "Something" });
    expect((await patch(id, { description: null })).status).toBe(200);
    expect((await documentRow(id)).description).toBeNull();
    expect((await eventsFor(t.db, id)).at(-1)!.diff).toEqual({
      before: { description: "Something" },
      after: { description: null },
    });
  });

  it("keeps the row of an edit that changes nothing, and records no event", async () => {
    const id = await newLink({ title: "Same", description: null });
    const row = await documentRow(id);
    const before = await counts();
    const bodies = [
      {},
      { title: "Same" },
      { description: null },
      { title: "Same", description: null },
    ];
    for (const body of bodies) {
      const res = await patch(id, body);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ id });
    }
    expect(await counts()).toEqual(before);
    expect(await documentRow(id)).toEqual(row);
  });

  it("edits team-level and project documents, imported files included", async () => {
    const survey = teamDoc("Survey results").id;
    expect((await patch(survey, { description: "2026 survey" })).status).toBe(200);
    expect(await documentRow(survey)).toMatchObject({
      kind: "file",
      filename: "survey.pdf",
      description: "2026 survey",
    });
    const datasheet = acme.projects[0]!.documents[0]!.id;
    expect((await patch(datasheet, { title: "Rover datasheet v2" })).status).toBe(200);
  });

  it("refuses the link target, category, kind and any other field", async () => {
    const id = await newLink({ title: "Fixed target" });
    const row = await documentRow(id);
    const before = await counts();
    for (const field of ["url", "category", "kind", "filename", "projectId", "uploadedBy"]) {
      const res = await patch(id, { title: "Moved", [field]: "https://evil.example" });
      expectInvalidRequest(res, `${field}: unknown field`);
    }
    for (const [body, field] of [
      [{ title: "t".repeat(201) }, "title"],
      [{ title: "" }, "title"],
      [{ title: null }, "title"],
      [{ description: "d".repeat(2001) }, "description"],
      [{ description: 1 }, "description"],
    ] as const) {
      const res = await patch(id, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(new RegExp(`^${field}: `));
    }
    expect(await counts()).toEqual(before);
    expect(await documentRow(id)).toEqual(row);
    expect(
      (await patch(id, { title: "t".repeat(200), description: "d".repeat(2000) })).status,
    ).toBe(200);
  });

  it("answers private, foreign, unknown and non-UUID ids with the same 404 body", async () => {
    const secretPlan = acme.projects[1]!.documents[0]!.id;
    const ids = [
      secretPlan,
      other.documents[0]!.id,
      other.projects[0]!.documents[0]!.id,
      "00000000-0000-4000-8000-000000000000",
      "not-a-uuid",
    ];
    const before = await counts();
    const body = await expectOneNotFoundBody(ids, (id) => patch(id, { title: "Hijack" }));
    expect(JSON.parse(body)).toEqual(NOT_FOUND_BODY);
    expect(await counts()).toEqual(before);
    expect((await documentRow(secretPlan)).title).toBe("Secret plan");
  });

  it("refuses a token whose creator left the organisation, writing nothing", async () => {
    const { workspace: ws, token: leaver } = await formerMemberToken(
      t.db,
      "leavers2",
      { documents: [link("Kept")] },
      ["documents:write"],
    );
    const before = await counts();
    const res = await patch(ws.documents[0]!.id, { title: "Changed" }, leaver);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/author/i);
    expect(await counts()).toEqual(before);
  });
});

describe("atomicity", () => {
  it("leaves neither the document nor the event when the event insert fails", async () => {
    await whileBoomEventsFail(t.db, async () => {
      const id = await newLink({ title: "Before boom" });
      const row = await documentRow(id);
      const before = await counts();
      const send = (method: "POST" | "PATCH", url: string) =>
        // Through inject rather than api(): a 500 is deliberately not a documented answer.
        t.app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          payload: JSON.stringify({
            title: "Boom",
            ...(method === "POST" ? { url: "https://x.example" } : {}),
          }),
        });
      expect((await send("POST", "/api/v1/documents")).statusCode).toBe(500);
      expect((await send("POST", "/api/v1/projects/arm/documents")).statusCode).toBe(500);
      const edited = await send("PATCH", `/api/v1/documents/${id}`);
      expect(edited.statusCode).toBe(500);
      expect(edited.json()).toEqual({
        ok: false,
        error: "internal_error",
        message: "Internal server error",
      });
      expect(await counts()).toEqual(before);
      expect(await documentRow(id)).toEqual(row);
    });
  });
});
