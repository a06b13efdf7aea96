import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { meetings, pages } from "../../src/db/schema/index.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importFixture, mintToken, project, workspaceDocument } from "../support/fixtures.js";

let t: TestApp;
let token: string;
const DANGEROUS = "[open](javascript:alert(1)) and [file](data:text/html,<b>x</b>)";

beforeAll(async () => {
  t = await createTestApp();
  const ws = await importFixture(
    t.db,
    workspaceDocument("links", {
      projects: [
        project("rover", {
          pages: [{ title: "Imported", markdown: DANGEROUS }],
          meetings: [
            {
              title: "Imported minutes",
              startsAt: "2026-01-05T10:00:00Z",
              durationMinutes: 30,
              status: "completed",
              locationType: "video",
              location: "https://meet.example/room",
              audience: "org",
              minutesMarkdown: DANGEROUS,
            },
          ],
        }),
      ],
    }),
  );
  token = await mintToken(t.db, ws);
});
afterAll(() => t.close());

it("stores no javascript: or data: link, through the API or the import", async () => {
  const created = await api(t.app, "POST", "/api/v1/projects/rover/pages", {
    token,
    body: { title: "Written", markdown: DANGEROUS },
  });
  expect(created.status).toBe(200);
  const stored = [
    ...(await t.db.select({ body: pages.body }).from(pages)).map((row) => row.body),
    ...(await t.db.select({ minutes: meetings.minutes }).from(meetings)).map((row) => row.minutes),
  ];
  expect(stored).toHaveLength(3);
  for (const body of stored) {
    const json = JSON.stringify(body);
    expect(json).not.toContain('"link"');
    expect(json).toContain("[open](javascript:alert(1))");
  }
  const [written] = await t.db.select().from(pages).where(eq(pages.title, "Written"));
  expect(JSON.stringify(written?.body)).toContain("[file](data:text/html,<b>x</b>)");
});
