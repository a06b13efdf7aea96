import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, documents } from "../../src/db/schema/index.js";
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

// Arbitrary JSON bodies against the document writes: the answer is always 200 or a 400
// failure envelope, never a 5xx, and a 400 changes nothing.

let t: TestApp;
let acme: Workspace;
let token: string;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    documents: [
      { category: "documentation", kind: "link", title: "Handbook", url: "https://example.com" },
    ],
    projects: [project("rover")],
  });
  token = await mintToken(t.db, acme, ["documents:read", "documents:write"]);
});
afterAll(() => t.close());

const counts = () => countRows(t.db, { documents, events: changeEvents });

const anyText = clientText([
  "",
  "x".repeat(200),
  "x".repeat(201),
  "d".repeat(2000),
  "d".repeat(2001),
]);
const anyValue = clientValue(anyText);
const anyUrl = fc.oneof(
  fc.webUrl(),
  fc.webUrl().map((url) => `${url}\u0000`),
  fc.constantFrom("javascript:alert(1)", "ftp://x.example", "/relative", "http://", "https://a b"),
  anyValue,
);

const linkBodies = () =>
  clientBodies(
    fc.record(
      {
        title: fc.oneof(anyText, anyValue),
        url: anyUrl,
        category: fc.oneof(fc.constantFrom("documentation", "research"), anyValue),
        description: fc.oneof(anyText, anyValue),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      { title: anyText, url: fc.webUrl(), description: anyText, kind: anyValue },
      { requiredKeys: ["title", "url"] },
    ),
  );

describe.each(["/api/v1/documents", "/api/v1/projects/rover/documents"])(
  "POST %s with arbitrary bodies",
  (url) => {
    it("answers 200 or 400, and a 400 writes nothing", async () => {
      await assertRefusalsChangeNothing({
        bodies: linkBodies(),
        send: (body) => api(t.app, "POST", url, { token, body }),
        state: counts,
        accepted: (before, after) =>
          expect(after).toEqual({ documents: before.documents + 1, events: before.events + 1 }),
        numRuns: 100,
      });
    });
  },
);

describe("PATCH /documents/{document_id} with arbitrary bodies", () => {
  const bodies = () =>
    clientBodies(
      fc.record(
        {
          title: fc.oneof(anyText, anyValue),
          description: fc.oneof(anyText, anyValue),
          url: anyUrl,
        },
        { requiredKeys: [] },
      ),
      fc.record({ title: anyText, description: fc.option(anyText) }, { requiredKeys: [] }),
    );

  it("answers 200 or 400, and a 400 writes nothing", async () => {
    const id = acme.documents[0]!.id;
    await assertRefusalsChangeNothing({
      bodies: bodies(),
      send: (body) => api(t.app, "PATCH", `/api/v1/documents/${id}`, { token, body }),
      state: counts,
      accepted: (before, after) => {
        expect(after.documents).toBe(before.documents);
        // An edit that changes something records one event; one that changes nothing, none.
        expect([0, 1]).toContain(after.events - before.events);
      },
      numRuns: 100,
    });
  });
});
