import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, pageRevisions, pages } from "../../src/db/schema/index.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import {
  assertRefusalsChangeNothing,
  clientBodies,
  clientText,
  clientValue,
} from "../support/property.js";
import { countRows } from "../support/row-counts.js";

// Arbitrary JSON bodies against the page writes: the answer is always 200 or a 400 failure
// envelope, never a 5xx, and a 400 changes nothing.

let t: TestApp;
let acme: Workspace;
let token: string;
let pageId: string;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        pages: [{ title: "Home", markdown: "# Home", children: [{ title: "Child" }] }],
      }),
      project("secret", { visibility: "private", pages: [{ title: "Hidden" }] }),
    ],
  });
  token = await mintToken(t.db, acme, ["pages:read", "pages:write"]);
  pageId = acme.projects[0]!.pages[0]!.id;
});
afterAll(() => t.close());

const counts = () => countRows(t.db, { pages, revisions: pageRevisions, events: changeEvents });

const anyText = clientText([
  "",
  "x".repeat(200),
  "x".repeat(201),
  "# Heading\n\n- a\n  - b",
  "| a |\n|---|",
]);

const anyValue = clientValue(anyText);

const idLike = () =>
  fc.oneof(
    fc.constantFrom(
      acme.projects[0]!.pages[0]!.id,
      acme.projects[1]!.pages[0]!.id,
      "00000000-0000-4000-8000-000000000000",
      "not-a-uuid",
    ),
    fc.uuid(),
    anyValue,
  );

describe("POST /projects/{slug}/pages with arbitrary bodies", () => {
  const bodies = () =>
    clientBodies(
      fc.record(
        {
          title: fc.oneof(anyText, anyValue),
          markdown: fc.oneof(anyText, anyValue),
          parent_page_id: idLike(),
        },
        { requiredKeys: [] },
      ),
      fc.record(
        { title: anyText, markdown: anyText, extra: anyValue },
        { requiredKeys: ["title"] },
      ),
    );

  it("answers 200 or 400, and a 400 writes nothing", async () => {
    await assertRefusalsChangeNothing({
      bodies: bodies(),
      send: (body) => api(t.app, "POST", "/api/v1/projects/rover/pages", { token, body }),
      state: counts,
      accepted: (before, after) =>
        expect(after).toEqual({
          pages: before.pages + 1,
          revisions: before.revisions + 1,
          events: before.events + 1,
        }),
      numRuns: 120,
    });
  });
});

describe("PATCH /pages/{page_id} with arbitrary bodies", () => {
  const bodies = () =>
    clientBodies(
      fc.record(
        {
          title: fc.oneof(anyText, anyValue),
          markdown: fc.oneof(anyText, anyValue),
          mode: fc.oneof(fc.constantFrom("replace", "append"), anyValue),
        },
        { requiredKeys: [] },
      ),
    );

  it("answers 200 or 400, and a 400 writes nothing", async () => {
    await assertRefusalsChangeNothing({
      bodies: bodies(),
      send: (body) => api(t.app, "PATCH", `/api/v1/pages/${pageId}`, { token, body }),
      state: counts,
      accepted: (before, after) => {
        expect(after.pages).toBe(before.pages);
        // An edit that changes something adds a revision and an event; one that changes
        // nothing adds neither.
        expect([0, 1]).toContain(after.events - before.events);
        expect(after.revisions - before.revisions).toBe(after.events - before.events);
      },
      numRuns: 120,
    });
  });
});
