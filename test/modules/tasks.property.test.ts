import { isDeepStrictEqual } from "node:util";
import { eq } from "drizzle-orm";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, tasks } from "../../src/db/schema/index.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { assertRefusalsChangeNothing, clientText, clientValue } from "../support/property.js";
import { countRows } from "../support/row-counts.js";

// Arbitrary JSON bodies against the task writes: the answer is always 200 or a 400 failure
// envelope, never a 5xx, and a 400 changes nothing.

let t: TestApp;
let acme: Workspace;
let other: Workspace;
let token: string;
let taskId: string;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    projects: [project("rover", { tasks: [{ title: "Target of the patches" }] })],
  });
  other = await importOrganization(t.db, "other");
  token = await mintToken(t.db, acme, ["tasks:read", "tasks:write"]);
  taskId = acme.projects[0]?.tasks[0]?.id ?? "";
});
afterAll(() => t.close());

const counts = () => countRows(t.db, { tasks, events: changeEvents });

const anyText = clientText(["", "x", "xy", "x".repeat(200), "x".repeat(201), "x".repeat(4001)]);
const anyValue = clientValue(anyText);
const dateLike = fc.oneof(
  fc.constantFrom("2026-02-28", "2024-02-29", "2026-02-30", "0000-01-01", "9999-12-31", "2026-1-1"),
  fc
    .date({ min: new Date("0001-01-01"), max: new Date("9999-12-31"), noInvalidDate: true })
    .map((date) => date.toISOString().slice(0, 10)),
  anyValue,
);
const assigneeLike = () =>
  fc.oneof(
    fc.constantFrom(
      acme.users[0]?.id,
      acme.users[1]?.id,
      other.users[0]?.id,
      "00000000-0000-4000-8000-000000000000",
      "not-a-uuid",
    ),
    fc.uuid(),
    anyValue,
  );

/** Objects built from TaskPatch's own field names, with valid and invalid values. */
const taskFields = () => ({
  title: fc.oneof(anyText, anyValue),
  description: fc.oneof(anyText, anyValue),
  status: fc.oneof(
    fc.constantFrom("not_started", "in_progress", "blocked", "done", "cancelled"),
    anyValue,
  ),
  priority: fc.oneof(fc.constantFrom("low", "normal", "high", "critical"), anyValue),
  start_date: dateLike,
  due_date: dateLike,
  blocked_reason: fc.oneof(anyText, anyValue),
  assigned_to: assigneeLike(),
});

/** Only values the API accepts (the assignee aside), so the success path is exercised too. */
const validFields = () => ({
  title: fc.string({ minLength: 2, maxLength: 200 }),
  description: fc.option(fc.string({ maxLength: 4000 })),
  status: fc.constantFrom("not_started", "in_progress", "blocked", "done", "cancelled"),
  priority: fc.constantFrom("low", "normal", "high", "critical"),
  start_date: fc.option(fc.constantFrom("2026-01-31", "2024-02-29", "0001-01-01", "9999-12-31")),
  due_date: fc.option(fc.constantFrom("2026-12-31", "2026-06-15")),
  blocked_reason: fc.option(fc.string({ maxLength: 500 })),
  assigned_to: fc.option(fc.constantFrom(acme.users[0]?.id, acme.users[1]?.id)),
});

const bodies = () =>
  fc.oneof(
    fc.record(validFields(), { requiredKeys: [] }),
    fc.record(validFields(), { requiredKeys: ["title"] }),
    fc.anything(),
    fc.object(),
    fc.record(taskFields(), { requiredKeys: [] }),
    fc.record({ ...taskFields(), title: fc.string({ minLength: 2, maxLength: 200 }) }),
    fc.record(
      { title: fc.string({ minLength: 2, maxLength: 10 }), extra: anyValue },
      { requiredKeys: ["title"] },
    ),
  );

describe("POST /projects/{slug}/tasks with arbitrary bodies", () => {
  it("answers 200 or 400, and a 400 writes nothing", async () => {
    const seen = new Set<number>();
    await assertRefusalsChangeNothing({
      bodies: bodies(),
      send: (body) => api(t.app, "POST", "/api/v1/projects/rover/tasks", { token, body }),
      state: counts,
      accepted: (before, after) =>
        expect(after).toEqual({ tasks: before.tasks + 1, events: before.events + 1 }),
      numRuns: 120,
      seen,
    });
    expect([...seen].sort()).toEqual([200, 400]);
  });
});

describe("PATCH /tasks/{task_id} with arbitrary bodies", () => {
  it("answers 200 or 400, and a 400 changes nothing", async () => {
    const taskRow = async () => (await t.db.select().from(tasks).where(eq(tasks.id, taskId)))[0];
    const seen = new Set<number>();
    await assertRefusalsChangeNothing({
      bodies: bodies(),
      send: (body) => api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, { token, body }),
      // A refusal leaves the counts and the task's row as they were.
      state: async () => ({ ...(await counts()), row: await taskRow() }),
      accepted: (before, after) => {
        expect(after.tasks).toBe(before.tasks);
        // An update records one event exactly when it changed the task.
        const changed = !isDeepStrictEqual(before.row, after.row);
        expect(after.events - before.events).toBe(changed ? 1 : 0);
      },
      numRuns: 120,
      seen,
    });
    expect([...seen].sort()).toEqual([200, 400]);
  });
});
