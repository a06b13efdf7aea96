import { asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Scope } from "../../src/core/scopes.js";
import { changeEvents, pageRevisions, pages } from "../../src/db/schema/index.js";
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
/** Every scope, as Max (user 1). */
let maxToken: string;

const rover = () => acme.projects[0]!;
const secret = () => acme.projects[1]!;
const adaId = () => acme.users[0]!.id;
const maxId = () => acme.users[1]!.id;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        pages: [
          {
            title: "Guide",
            markdown: "# Guide\n\nStart here.",
            children: [
              { title: "Setup", children: [{ title: "Wiring" }] },
              { title: "Usage", markdown: "Drive it." },
            ],
          },
          { title: "API" },
        ],
      }),
      project("secret", { visibility: "private", pages: [{ title: "Hidden" }] }),
      project("arm"),
    ],
  });
  other = await importOrganization(t.db, "other", {
    projects: [project("foreign", { pages: [{ title: "Theirs" }] })],
  });
  token = await mintToken(t.db, acme);
  maxToken = await mintToken(t.db, acme, ["pages:read", "pages:write"], 1);
});
afterAll(() => t.close());

const pageList = async (slug: string, tok = token) =>
  (await api(t.app, "GET", `/api/v1/projects/${slug}/pages`, { token: tok })).body.data as {
    id: string;
    parentId: string | null;
    title: string;
    position: number;
  }[];

const createPage = (slug: string, body: unknown, tok = token) =>
  api(t.app, "POST", `/api/v1/projects/${slug}/pages`, { token: tok, body });

const patchPage = (id: string, body: unknown, tok = token) =>
  api(t.app, "PATCH", `/api/v1/pages/${id}`, { token: tok, body });

const getPage = (id: string, tok = token) =>
  api(t.app, "GET", `/api/v1/pages/${id}`, { token: tok });

async function newPage(body: Record<string, unknown> = {}, slug = "arm"): Promise<string> {
  const res = await createPage(slug, { title: "Scratch", ...body });
  expect(res.status).toBe(200);
  return res.body.data.id;
}

const counts = () => countRows(t.db, { pages, revisions: pageRevisions, events: changeEvents });

async function pageRow(id: string) {
  const [row] = await t.db.select().from(pages).where(eq(pages.id, id));
  return row!;
}

async function revisionsOf(id: string) {
  return t.db
    .select({
      title: pageRevisions.title,
      body: pageRevisions.body,
      authorId: pageRevisions.authorId,
    })
    .from(pageRevisions)
    .where(eq(pageRevisions.pageId, id))
    .orderBy(asc(pageRevisions.sequence));
}

describe("GET /projects/{slug}/pages", () => {
  it("lists the tree depth-first with exactly the PageSummary fields and no bodies", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/pages", { token });
    expect(res.status).toBe(200);
    const [guide, api_] = rover().pages;
    const [setup, usage] = guide!.children;
    const wiring = setup!.children[0]!;
    expect(res.body.data.map((p: { title: string }) => p.title)).toEqual([
      "Guide",
      "Setup",
      "Wiring",
      "Usage",
      "API",
    ]);
    expect(res.body.data[2]).toEqual({
      id: wiring.id,
      parentId: setup!.id,
      title: "Wiring",
      position: 0,
      updatedAt: expect.stringMatching(/Z$/),
    });
    expect(res.body.data.map((p: { parentId: string | null }) => p.parentId)).toEqual([
      null,
      guide!.id,
      setup!.id,
      guide!.id,
      null,
    ]);
    expect(res.body.data[3].id).toBe(usage!.id);
    expect(res.body.data[4]).toMatchObject({ id: api_!.id, position: 1 });
    for (const page of res.body.data) {
      expect(Object.keys(page).sort()).toEqual([
        "id",
        "parentId",
        "position",
        "title",
        "updatedAt",
      ]);
    }
  });

  it("orders siblings by position, then title, then creation order", async () => {
    const ws = await importOrganization(t.db, "order", { projects: [project("tree")] });
    const projectId = ws.projects[0]!.id;
    const body = { type: "doc" as const, content: [] };
    const insert = async (title: string, position: number, parentId: string | null = null) => {
      const [row] = await t.db
        .insert(pages)
        .values({ projectId, parentId, title, position, body, text: "" })
        .returning({ id: pages.id });
      return row!.id;
    };
    // Inserted out of order so the creation order differs from the expected one.
    const late = await insert("Zeta", 2);
    await insert("Beta", 1);
    await insert("Alpha", 1);
    const twinA = await insert("Twin", 0);
    const twinB = await insert("Twin", 0);
    await insert("Child b", 1, late);
    await insert("Child a", 0, late);
    await insert("Grandchild", 0, twinB);
    const orderToken = await mintToken(t.db, ws, ["pages:read"]);
    const list = await pageList("tree", orderToken);
    expect(list.map((p) => p.title)).toEqual([
      "Twin",
      "Twin",
      "Grandchild",
      "Alpha",
      "Beta",
      "Zeta",
      "Child a",
      "Child b",
    ]);
    expect(list[0]!.id).toBe(twinA);
    expect(list[1]!.id).toBe(twinB);
  });

  it("answers an empty project with an empty array", async () => {
    const ws = await importOrganization(t.db, "empty", { projects: [project("e")] });
    expect(await pageList("e", await mintToken(t.db, ws, ["pages:read"]))).toEqual([]);
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "/pages");
  });
});

describe("GET /pages/{page_id}", () => {
  it("returns exactly the Page fields, the body as plain text", async () => {
    const guide = rover().pages[0]!;
    const res = await getPage(guide.id);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: guide.id,
      parentId: null,
      title: "Guide",
      text: "Guide\n\nStart here.",
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      updatedBy: null,
    });
    const setup = guide.children[0]!;
    expect((await getPage(setup.id)).body.data).toMatchObject({ parentId: guide.id, text: "" });
  });

  it("answers private, foreign, unknown and non-UUID ids with the same 404 body", async () => {
    const ids = [
      secret().pages[0]!.id,
      other.projects[0]!.pages[0]!.id,
      "00000000-0000-4000-8000-000000000000",
      "not-a-uuid",
      "12345",
    ];
    const body = await expectOneNotFoundBody(ids, (id) => getPage(id));
    expect(JSON.parse(body)).toEqual(NOT_FOUND_BODY);
  });
});

describe("scopes", () => {
  const guideId = () => rover().pages[0]!.id;
  const routes: [string, "GET" | "POST" | "PATCH", () => string, Scope, unknown][] = [
    ["list", "GET", () => "/api/v1/projects/rover/pages", "pages:read", undefined],
    ["get", "GET", () => `/api/v1/pages/${guideId()}`, "pages:read", undefined],
    ["create", "POST", () => "/api/v1/projects/arm/pages", "pages:write", { title: "Scoped" }],
    ["edit", "PATCH", () => `/api/v1/pages/${guideId()}`, "pages:write", { title: "Guide" }],
  ];
  it.each(routes)("%s needs its scope", async (_name, method, url, scope, body) => {
    const without = await tokenWithout(t, acme, scope, [
      "pages:read",
      "pages:write",
      "documents:read",
      "documents:write",
      "tasks:write",
    ]);
    expectInsufficientScope(await api(t.app, method, url(), { token: without, body }));
    const granted = await mintToken(t.db, acme, [scope]);
    expect((await api(t.app, method, url(), { token: granted, body })).status).toBe(200);
  });

  it("checks the token before the body", async () => {
    const readOnly = await mintToken(t.db, acme, ["pages:read"]);
    const res = await createPage("arm", { nonsense: true }, readOnly);
    expect(res.status).toBe(403);
    const anonymous = await api(t.app, "POST", "/api/v1/projects/arm/pages", { body: {} });
    expect(anonymous.status).toBe(401);
  });
});

describe("POST /projects/{slug}/pages", () => {
  it("creates a top-level page last among its siblings, attributed to the author", async () => {
    const before = (await pageList("rover")).filter((p) => p.parentId === null);
    const res = await createPage("rover", { title: "Release notes", markdown: "## v1\n\nFirst." });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: expect.any(String), title: "Release notes" });
    const id = res.body.data.id;
    const list = await pageList("rover");
    expect(list.at(-1)).toMatchObject({ id, parentId: null, position: before.length });
    const row = await pageRow(id);
    expect(row).toMatchObject({
      projectId: rover().id,
      createdBy: adaId(),
      updatedBy: adaId(),
      position: before.length,
    });
    const page = (await getPage(id)).body.data;
    expect(page).toMatchObject({
      title: "Release notes",
      text: "v1\n\nFirst.",
      updatedBy: adaId(),
    });
    expect(page.updatedAt).toBe(row.updatedAt.toISOString());
  });

  it("creates a child page under a parent of the same project", async () => {
    const guide = rover().pages[0]!;
    const res = await createPage("rover", { title: "FAQ", parent_page_id: guide.id }, maxToken);
    expect(res.status).toBe(200);
    const list = await pageList("rover");
    const faq = list.find((p) => p.id === res.body.data.id);
    // Guide already has Setup (0) and Usage (1).
    expect(faq).toMatchObject({ parentId: guide.id, position: 2 });
    // Pre-order: FAQ follows Usage, before the next top-level page.
    const titles = list.map((p) => p.title);
    expect(titles.indexOf("FAQ")).toBe(titles.indexOf("Usage") + 1);
    expect((await getPage(res.body.data.id)).body.data.updatedBy).toBe(maxId());
  });

  it("treats a null parent_page_id as top level", async () => {
    const res = await createPage("arm", { title: "Top", parent_page_id: null });
    expect(res.status).toBe(200);
    expect((await pageRow(res.body.data.id)).parentId).toBeNull();
  });

  it("without markdown creates an empty page", async () => {
    const id = await newPage();
    expect((await getPage(id)).body.data.text).toBe("");
    expect((await pageRow(id)).body).toEqual({ type: "doc", content: [] });
  });

  it("refuses a parent of another project, a private project or another organisation", async () => {
    const before = await counts();
    for (const parent of [
      rover().pages[0]!.id,
      secret().pages[0]!.id,
      other.projects[0]!.pages[0]!.id,
      "00000000-0000-4000-8000-000000000000",
    ]) {
      const res = await createPage("arm", { title: "Orphan", parent_page_id: parent });
      expectInvalidRequest(res, "parent_page_id: must be a page of this project");
    }
    const res = await createPage("arm", { title: "Orphan", parent_page_id: "nope" });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^parent_page_id: /);
    expect(await counts()).toEqual(before);
  });

  it("keeps the title within 1 to 200 characters", async () => {
    expect((await createPage("arm", { title: "x".repeat(200) })).status).toBe(200);
    expect((await createPage("arm", { title: "y" })).status).toBe(200);
    for (const title of ["x".repeat(201), "", null, 7]) {
      const res = await createPage("arm", { title });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/^title: /);
    }
    const missing = await createPage("arm", { markdown: "body" });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/^title: /);
  });

  it("refuses unknown fields, so ids, authors and timestamps cannot be set", async () => {
    for (const field of ["id", "projectId", "updatedBy", "position", "parentId", "mode"]) {
      const res = await createPage("arm", { title: "Sneaky", [field]: "x" });
      expectInvalidRequest(res, `${field}: unknown field`);
    }
  });

  it("refuses text the database cannot store", async () => {
    for (const body of [{ title: "a\u0000b" }, { title: "ok", markdown: "x\ud800y" }]) {
      const res = await createPage("arm", body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
  });

  it("refuses markdown nested too deeply to convert in bounded time, naming the line", async () => {
    const before = await counts();
    const nested = [
      "# Deep",
      ...Array.from({ length: 40 }, (_, i) => `${"  ".repeat(i)}- level ${i}`),
    ];
    const res = await createPage("rover", { title: "Deep", markdown: nested.join("\n") });
    expectInvalidRequest(res, expect.stringMatching(/^markdown: line 34 is nested too deeply/));
    expect(await counts()).toEqual(before);
    const shallow = await createPage("rover", {
      title: "Shallow",
      markdown: nested.slice(0, 30).join("\n"),
    });
    expect(shallow.status).toBe(200);
  });

  it("answers 404 for a private, foreign or unknown project, after validating the body", async () => {
    for (const slug of ["secret", "foreign", "nowhere"]) {
      expect((await createPage(slug, { title: "In vain" })).status).toBe(404);
      expect((await createPage(slug, { title: "" })).status).toBe(400);
    }
  });

  it("records the first revision and a page.created event", async () => {
    const guide = rover().pages[0]!;
    const res = await createPage("rover", {
      title: "Checklist",
      markdown: "- one\n- two",
      parent_page_id: guide.id,
    });
    const id = res.body.data.id;
    const revisions = await revisionsOf(id);
    expect(revisions).toHaveLength(1);
    expect(revisions[0]).toMatchObject({ title: "Checklist", authorId: adaId() });
    expect(revisions[0]!.body).toEqual((await pageRow(id)).body);
    expect(await eventsFor(t.db, id)).toEqual([
      {
        organizationId: acme.organization.id,
        type: "page.created",
        action: "created",
        targetKind: "page",
        targetId: id,
        actorId: adaId(),
        diff: {
          before: {},
          after: { title: "Checklist", parentId: guide.id, text: "- one\n- two" },
        },
      },
    ]);
  });

  it("gives pages created at the same time distinct positions", async () => {
    const parent = await newPage({ title: "Busy parent" });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        createPage("arm", { title: `Child ${i}`, parent_page_id: parent }),
      ),
    );
    for (const res of results) expect(res.status).toBe(200);
    const positions = (await pageList("arm"))
      .filter((p) => p.parentId === parent)
      .map((p) => p.position)
      .sort((a, b) => a - b);
    expect(positions).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it("refuses a token whose creator left the organisation, writing nothing", async () => {
    const { token: leaver } = await formerMemberToken(
      t.db,
      "leavers",
      { projects: [project("gone")] },
      ["pages:read", "pages:write"],
    );
    const before = await counts();
    const res = await createPage("gone", { title: "Ghost" }, leaver);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    expect(res.body.message).toMatch(/author/i);
    expect(await counts()).toEqual(before);
    // Reading still works.
    expect((await api(t.app, "GET", "/api/v1/projects/gone/pages", { token: leaver })).status).toBe(
      200,
    );
  });
});

describe("markdown through the API", () => {
  // Lists, tables and images read back as they were written; headings and marks do not.
  const unchanged = [
    "- first",
    "  - nested",
    "    1. deep",
    "- second",
    "",
    "1. one",
    "2. two",
    "",
    "| h1 | h2 |",
    "| --- | --- |",
    "| x | y |",
    "",
    "![diagram](https://example.com/d.png)",
  ];
  const markdown = [
    "# Title",
    "",
    "Intro **bold** and [a link](https://example.com).",
    "",
    "## Steps",
    "",
    ...unchanged,
  ].join("\n");

  it("converts headings and nested lists to nodes and keeps tables and images as text", async () => {
    const id = await newPage({ markdown });
    const body = (await pageRow(id)).body as { content: { type: string }[] };
    expect(body.content.map((node) => node.type)).toEqual([
      "heading",
      "paragraph",
      "heading",
      "bulletList",
      "orderedList",
      "paragraph",
      "paragraph",
    ]);
    expect((await getPage(id)).body.data.text).toBe(
      ["Title", "", "Intro bold and a link.", "", "Steps", "", ...unchanged].join("\n"),
    );
  });

  it("appends below a divider and replaces by default", async () => {
    const id = await newPage({ markdown: "# Log\n\nDay one." });
    expect((await patchPage(id, { markdown: "Day two.", mode: "append" })).status).toBe(200);
    expect((await getPage(id)).body.data.text).toBe("Log\n\nDay one.\n\n---\n\nDay two.");
    const body = (await pageRow(id)).body as { content: { type: string }[] };
    expect(body.content.map((node) => node.type)).toEqual([
      "heading",
      "paragraph",
      "horizontalRule",
      "paragraph",
    ]);
    expect((await patchPage(id, { markdown: "- fresh" })).status).toBe(200);
    expect((await getPage(id)).body.data.text).toBe("- fresh");
    expect((await patchPage(id, { markdown: "# Again", mode: "replace" })).status).toBe(200);
    expect((await getPage(id)).body.data.text).toBe("Again");
  });

  it("keeps every one of several appends sent at the same time", async () => {
    const id = await newPage({ markdown: "Start" });
    const parts = ["one", "two", "three", "four", "five"];
    const results = await Promise.all(
      parts.map((part) => patchPage(id, { markdown: part, mode: "append" })),
    );
    for (const res of results) expect(res.status).toBe(200);
    const blocks = (await getPage(id)).body.data.text.split("\n\n---\n\n");
    expect(blocks[0]).toBe("Start");
    expect(blocks.slice(1).sort()).toEqual([...parts].sort());
    expect(await revisionsOf(id)).toHaveLength(1 + parts.length);
  });

  it("appends to an empty page without a divider", async () => {
    const id = await newPage();
    await patchPage(id, { markdown: "First words", mode: "append" });
    expect((await getPage(id)).body.data.text).toBe("First words");
  });
});

describe("PATCH /pages/{page_id}", () => {
  it("changes only the title when only the title is sent", async () => {
    const id = await newPage({ title: "Old", markdown: "Keep me" });
    const bodyBefore = (await pageRow(id)).body;
    const res = await patchPage(id, { title: "New" }, maxToken);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id, updatedAt: expect.stringMatching(/Z$/) });
    const row = await pageRow(id);
    expect(row).toMatchObject({ title: "New", updatedBy: maxId(), createdBy: adaId() });
    expect(row.body).toEqual(bodyBefore);
    expect(res.body.data.updatedAt).toBe(row.updatedAt.toISOString());
    expect((await getPage(id)).body.data).toMatchObject({
      title: "New",
      text: "Keep me",
      updatedBy: maxId(),
      updatedAt: res.body.data.updatedAt,
    });
  });

  it("changes only the body when only markdown is sent", async () => {
    const id = await newPage({ title: "Stays", markdown: "old" });
    await patchPage(id, { markdown: "new" });
    expect((await getPage(id)).body.data).toMatchObject({ title: "Stays", text: "new" });
  });

  it("keeps the revision history: one row per create and edit, attributed", async () => {
    const id = await newPage({ title: "History", markdown: "v1" });
    await patchPage(id, { markdown: "v2" }, maxToken);
    await patchPage(id, { title: "History 2", markdown: "v3", mode: "append" });
    const revisions = await revisionsOf(id);
    expect(revisions.map((r) => [r.title, r.authorId])).toEqual([
      ["History", adaId()],
      ["History", maxId()],
      ["History 2", adaId()],
    ]);
    expect(revisions.at(-1)!.body).toEqual((await pageRow(id)).body);
  });

  it("records page.updated with the changed fields among title and text", async () => {
    const id = await newPage({ title: "Evented", markdown: "before" });
    await patchPage(id, { markdown: "after" }, maxToken);
    await patchPage(id, { title: "Renamed" });
    const events = await eventsFor(t.db, id);
    expect(events.map((e) => e.type)).toEqual(["page.created", "page.updated", "page.updated"]);
    expect(events[1]).toEqual({
      organizationId: acme.organization.id,
      type: "page.updated",
      action: "updated",
      targetKind: "page",
      targetId: id,
      actorId: maxId(),
      diff: { before: { text: "before" }, after: { text: "after" } },
    });
    expect(events[2]!.diff).toEqual({ before: { title: "Evented" }, after: { title: "Renamed" } });
    expect(events[2]!.actorId).toBe(adaId());
  });

  it("writes no revision and no event for an edit that changes nothing, and keeps updatedAt", async () => {
    const id = await newPage({ title: "Same", markdown: "# Same" });
    const row = await pageRow(id);
    const before = await counts();
    const bodies = [
      {},
      { title: "Same" },
      { markdown: "# Same" },
      { markdown: "", mode: "append" },
      { title: "Same", markdown: "# Same", mode: "replace" },
    ];
    for (const body of bodies) {
      const res = await patchPage(id, body, maxToken);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ id, updatedAt: row.updatedAt.toISOString() });
      expect(await pageRow(id)).toEqual(row);
    }
    expect(await counts()).toEqual(before);
  });

  it("records a formatting-only edit as a revision and an event with an empty diff", async () => {
    const id = await newPage({ title: "Styled", markdown: "plain words" });
    const before = await counts();
    const res = await patchPage(id, { markdown: "**plain** words" }, maxToken);
    expect(res.status).toBe(200);
    expect(await counts()).toEqual({
      pages: before.pages,
      revisions: before.revisions + 1,
      events: before.events + 1,
    });
    expect((await eventsFor(t.db, id)).at(-1)?.diff).toEqual({ before: {}, after: {} });
  });

  it("refuses mode without markdown", async () => {
    const id = await newPage({ markdown: "untouched" });
    const before = await counts();
    for (const mode of ["append", "replace"]) {
      const res = await patchPage(id, { mode });
      expectInvalidRequest(res, "mode: only allowed with markdown");
    }
    expect(await counts()).toEqual(before);
  });

  it("validates each field and refuses unknown ones, changing nothing", async () => {
    const id = await newPage({ title: "Valid" });
    expect((await patchPage(id, { title: "t".repeat(200) })).status).toBe(200);
    const before = await counts();
    const cases: [unknown, RegExp][] = [
      [{ title: "t".repeat(201) }, /^title: /],
      [{ title: "" }, /^title: /],
      [{ title: null }, /^title: /],
      [{ markdown: null }, /^markdown: /],
      [{ markdown: 5 }, /^markdown: /],
      [{ markdown: "x", mode: "prepend" }, /^mode: /],
      [{ markdown: "x", mode: null }, /^mode: /],
      [{ parent_page_id: null }, /^parent_page_id: unknown field$/],
      [{ text: "x" }, /^text: unknown field$/],
      [{ updatedBy: adaId() }, /^updatedBy: unknown field$/],
    ];
    for (const [body, message] of cases) {
      const res = await patchPage(id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.message).toMatch(message);
    }
    for (const payload of ["[]", '"text"', "null", "{"]) {
      const res = await api(t.app, "PATCH", `/api/v1/pages/${id}`, {
        token,
        payload,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, payload).toBe(400);
    }
    expect(await counts()).toEqual(before);
    expect((await pageRow(id)).title).toBe("t".repeat(200));
  });

  it("answers private, foreign, unknown and non-UUID ids with the same 404 body", async () => {
    const before = await counts();
    const body = await expectOneNotFoundBody(
      [
        secret().pages[0]!.id,
        other.projects[0]!.pages[0]!.id,
        "00000000-0000-4000-8000-000000000000",
        "not-a-uuid",
      ],
      (id) => patchPage(id, { title: "Hijack" }),
    );
    expect(body).toBe((await getPage("not-a-uuid")).raw);
    expect(await counts()).toEqual(before);
    expect((await pageRow(secret().pages[0]!.id)).title).toBe("Hidden");
  });

  it("refuses a token whose creator left the organisation, writing nothing", async () => {
    const { workspace: ws, token: leaver } = await formerMemberToken(
      t.db,
      "leavers2",
      { projects: [project("p", { pages: [{ title: "Kept" }] })] },
      ["pages:write"],
    );
    const before = await counts();
    const res = await patchPage(ws.projects[0]!.pages[0]!.id, { title: "Changed" }, leaver);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/author/i);
    expect(await counts()).toEqual(before);
  });
});

describe("atomicity", () => {
  it("leaves neither the page, its revision nor the event when the event insert fails", async () => {
    await whileBoomEventsFail(t.db, async () => {
      const id = await newPage({ title: "Before boom", markdown: "kept" });
      const row = await pageRow(id);
      const before = await counts();
      // Through inject rather than api(): a 500 is deliberately not a documented answer.
      const created = await t.app.inject({
        method: "POST",
        url: "/api/v1/projects/arm/pages",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        payload: JSON.stringify({ title: "Boom" }),
      });
      expect(created.statusCode).toBe(500);
      expect(created.json()).toEqual({
        ok: false,
        error: "internal_error",
        message: "Internal server error",
      });
      const edited = await t.app.inject({
        method: "PATCH",
        url: `/api/v1/pages/${id}`,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        payload: JSON.stringify({ title: "Boom", markdown: "lost" }),
      });
      expect(edited.statusCode).toBe(500);
      expect(await counts()).toEqual(before);
      expect(await pageRow(id)).toEqual(row);
    });
  });
});
