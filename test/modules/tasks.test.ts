import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, tasks } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { removeMember } from "../../src/modules/users/service.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { eventsFor } from "../support/change-events.js";
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
  HIDDEN_PROJECT_SLUGS,
} from "../support/not-found.js";
import { countRows } from "../support/row-counts.js";
import { expectInsufficientScope, expectTokenThenScope } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let other: Workspace;
/** Admin (user 0): tasks:read + tasks:write. */
let token: string;
/** Member (user 1): tasks:write only. */
let memberToken: string;
let privateTaskId: string;
let foreignTaskId: string;

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

const user = (email: string, name: string, role = "member") => ({ email, name, role });

function userId(workspace: Workspace, index: number): string {
  const found = workspace.users[index];
  if (found === undefined) throw new Error(`fixture has no user ${index}`);
  return found.id;
}

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    users: [
      user("admin@acme.example", "Ada Admin", "admin"),
      user("member@acme.example", "Max Member"),
      user("gone@acme.example", "Gus Gone"),
      user("leaver@acme.example", "Lea Leaver"),
    ],
    projects: [
      project("rover", {
        tasks: [
          {
            title: "Imported first",
            description: "From the import",
            due_date: "2026-04-01",
            start_date: "2026-03-01",
          },
          {
            title: "Imported second",
            status: "blocked",
            priority: "high",
            blocked_reason: "Waiting for parts",
            assignee_email: "member@acme.example",
          },
        ],
      }),
      project("empty"),
      project("secret", { visibility: "private", tasks: [{ title: "Hidden task" }] }),
    ],
  });
  other = await importOrganization(t.db, "other", {
    projects: [project("foreign", { tasks: [{ title: "Their task" }] })],
  });
  token = await mintToken(t.db, acme, ["tasks:read", "tasks:write"], 0);
  memberToken = await mintToken(t.db, acme, ["tasks:write"], 1);
  await removeMember(t.db, systemAudit, { orgSlug: "acme", email: "gone@acme.example" });
  privateTaskId = acme.projects[2]?.tasks[0]?.id ?? "";
  foreignTaskId = other.projects[0]?.tasks[0]?.id ?? "";
});
afterAll(() => t.close());

const counts = () => countRows(t.db, { tasks, events: changeEvents });

async function taskRow(id: string) {
  const [row] = await t.db.select().from(tasks).where(eq(tasks.id, id));
  if (row === undefined) throw new Error(`no task ${id}`);
  return row;
}

async function createTask(body: Record<string, unknown>, slug = "rover"): Promise<string> {
  const res = await api(t.app, "POST", `/api/v1/projects/${slug}/tasks`, { token, body });
  expect(res.status).toBe(200);
  return res.body.data.id;
}

describe("GET /projects/{slug}/tasks", () => {
  it("lists tasks in creation order with exactly the spec's fields and no id", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/rover/tasks", { token });
    expect(res.status).toBe(200);
    expect(res.body.data.slice(0, 2)).toEqual([
      {
        title: "Imported first",
        status: "not_started",
        priority: "normal",
        targetDate: "2026-04-01",
        description: "From the import",
      },
      {
        title: "Imported second",
        status: "blocked",
        priority: "high",
        targetDate: null,
        description: null,
      },
    ]);
  });

  it("appends a task created through the API at the end", async () => {
    await createTask({ title: "Zz created later" });
    await createTask({ title: "Aa created last" });
    const res = await api(t.app, "GET", "/api/v1/projects/rover/tasks", { token });
    const titles = res.body.data.map((task: { title: string }) => task.title);
    expect(titles.slice(-2)).toEqual(["Zz created later", "Aa created last"]);
    expect(titles.slice(0, 2)).toEqual(["Imported first", "Imported second"]);
  });

  it("answers an empty array for a project without tasks", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/empty/tasks", { token });
    expect(res.body).toEqual({ ok: true, data: [] });
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectHiddenProjectsNotFound(t.app, token, "/tasks");
  });

  it("needs a token, then tasks:read", async () => {
    expect((await api(t.app, "GET", "/api/v1/projects/rover/tasks")).status).toBe(401);
    expectInsufficientScope(
      await api(t.app, "GET", "/api/v1/projects/rover/tasks", { token: memberToken }),
    );
  });
});

describe("POST /projects/{slug}/tasks", () => {
  it("creates a task with the defaults, attributed to the token's user, with its event", async () => {
    const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Fit wheels" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: { id: expect.stringMatching(/^[0-9a-f-]{36}$/) } });
    const id = res.body.data.id;
    const row = await taskRow(id);
    expect(row).toMatchObject({
      projectId: acme.projects[0]?.id,
      title: "Fit wheels",
      description: null,
      status: "not_started",
      priority: "normal",
      startDate: null,
      dueDate: null,
      blockedReason: null,
      assignedTo: null,
      createdBy: userId(acme, 0),
      updatedBy: userId(acme, 0),
    });
    expect(row.updatedAt).toBeInstanceOf(Date);
    expect(await eventsFor(t.db, id)).toEqual([
      {
        organizationId: acme.organization.id,
        type: "task.created",
        action: "created",
        targetKind: "task",
        targetId: id,
        actorId: userId(acme, 0),
        diff: {
          before: {},
          after: {
            title: "Fit wheels",
            description: null,
            status: "not_started",
            priority: "normal",
            start_date: null,
            due_date: null,
            blocked_reason: null,
            assigned_to: null,
          },
        },
      },
    ]);
  });

  it("takes every TaskPatch field, and a token with only tasks:write may create", async () => {
    const body = {
      title: "Order motors",
      description: "Four of them",
      status: "in_progress",
      priority: "critical",
      start_date: "2026-02-01",
      due_date: "2026-02-28",
      blocked_reason: null,
      assigned_to: userId(acme, 1),
    };
    const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
      token: memberToken,
      body,
    });
    expect(res.status).toBe(200);
    const id = res.body.data.id;
    expect(await taskRow(id)).toMatchObject({
      title: "Order motors",
      description: "Four of them",
      status: "in_progress",
      priority: "critical",
      startDate: "2026-02-01",
      dueDate: "2026-02-28",
      blockedReason: null,
      assignedTo: userId(acme, 1),
      createdBy: userId(acme, 1),
      updatedBy: userId(acme, 1),
    });
    const [event] = await eventsFor(t.db, id);
    expect(event?.actorId).toBe(userId(acme, 1));
    expect(event?.diff).toEqual({ before: {}, after: body });
  });

  const boundaries: [string, Record<string, unknown>, boolean][] = [
    ["title of 1 character", { title: "x" }, false],
    ["title of 2 characters", { title: "xy" }, true],
    ["title of 200 characters", { title: "t".repeat(200) }, true],
    ["title of 201 characters", { title: "t".repeat(201) }, false],
    ["description of 4000 characters", { title: "ok", description: "d".repeat(4000) }, true],
    ["description of 4001 characters", { title: "ok", description: "d".repeat(4001) }, false],
    ["blocked_reason of 500 characters", { title: "ok", blocked_reason: "b".repeat(500) }, true],
    ["blocked_reason of 501 characters", { title: "ok", blocked_reason: "b".repeat(501) }, false],
  ];
  it.each(boundaries)("%s: accepted=%s", async (_name, body, accepted) => {
    const before = await counts();
    const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", { token, body });
    if (accepted) {
      expect(res.status).toBe(200);
      expect(await counts()).toEqual({ tasks: before.tasks + 1, events: before.events + 1 });
    } else {
      expectInvalidRequest(res);
      const field = Object.keys(body).find((key) => key !== "title") ?? "title";
      expect(res.body.message).toMatch(new RegExp(`^${field}: `));
      expect(await counts()).toEqual(before);
    }
  });

  const refusals: [string, unknown, string][] = [
    ["a missing title", { description: "no title" }, "title"],
    ["a null title", { title: null }, "title"],
    ["a title that is not a string", { title: 42 }, "title"],
    ["an unknown status", { title: "ok", status: "finished" }, "status"],
    ["a null status", { title: "ok", status: null }, "status"],
    ["an unknown priority", { title: "ok", priority: "urgent" }, "priority"],
    ["an impossible date", { title: "ok", due_date: "2026-02-30" }, "due_date"],
    ["year 0000", { title: "ok", start_date: "0000-01-01" }, "start_date"],
    ["a date-time for a date", { title: "ok", due_date: "2026-02-01T00:00:00Z" }, "due_date"],
    ["a NUL character", { title: "a\u0000b" }, "title"],
    ["a NUL character in the description", { title: "ok", description: "\u0000" }, "description"],
    ["an assignee that is not a uuid", { title: "ok", assigned_to: "Max Member" }, "assigned_to"],
    ["an unknown field", { title: "ok", id: UNKNOWN_ID }, "id"],
    ["a client-set author", { title: "ok", created_by: UNKNOWN_ID }, "created_by"],
    ["a body that is not an object", ["title"], "body"],
  ];
  it.each(refusals)("refuses %s with a 400 naming the field", async (_name, body, field) => {
    const before = await counts();
    const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", { token, body });
    expectInvalidRequest(res);
    expect(res.body.message).toContain(`${field}: `);
    expect(await counts()).toEqual(before);
  });

  it.each([
    ["due_date", "2026-02-30"],
    ["due_date", "31/05/2026"],
    ["start_date", "2026-05-01T00:00:00Z"],
  ])("names the format when %s %s is not a date", async (field, value) => {
    const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "ok", [field]: value },
    });
    expectInvalidRequest(res);
    expect(res.body.message).toBe(`${field}: expected a date as YYYY-MM-DD`);
  });

  it("refuses an assignee who is not a current member of the organisation", async () => {
    const outsiders = [
      ["another organisation's member", userId(other, 0)],
      ["a removed member", userId(acme, 2)],
      ["an unknown user", UNKNOWN_ID],
    ];
    for (const [, assignee] of outsiders) {
      const before = await counts();
      const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
        token,
        body: { title: "Assign me", assigned_to: assignee },
      });
      expectInvalidRequest(res);
      expect(res.body.message).toMatch(/^assigned_to: /);
      expect(await counts()).toEqual(before);
    }
  });

  it("answers private, foreign and unknown projects with the same 404 body, writing nothing", async () => {
    const before = await counts();
    await expectOneNotFoundBody(HIDDEN_PROJECT_SLUGS, (slug) =>
      api(t.app, "POST", `/api/v1/projects/${slug}/tasks`, { token, body: { title: "Sneak in" } }),
    );
    expect(await counts()).toEqual(before);
  });

  it("checks 401, then 403, then the body, then the project", async () => {
    const url = "/api/v1/projects/secret/tasks";
    const bad = { title: "x" };
    await expectTokenThenScope(t, acme, "tasks:write", "POST", url, bad);
    expect((await api(t.app, "POST", url, { token, body: bad })).status).toBe(400);
    expect((await api(t.app, "POST", url, { token, body: { title: "xy" } })).status).toBe(404);
  });

  it("refuses a write from a token whose creator left, writing nothing", async () => {
    const leaverToken = await mintToken(t.db, acme, ["tasks:read", "tasks:write"], 3);
    await removeMember(t.db, systemAudit, { orgSlug: "acme", email: "leaver@acme.example" });
    const before = await counts();
    const res = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
      token: leaverToken,
      body: { title: "Ghost task" },
    });
    expectInvalidRequest(res);
    expect(res.body.message).toMatch(/author/i);
    expect(await counts()).toEqual(before);
    // It can still read.
    const read = await api(t.app, "GET", "/api/v1/projects/rover/tasks", { token: leaverToken });
    expect(read.status).toBe(200);
  });
});

describe("PATCH /tasks/{task_id}", () => {
  let taskId: string;

  beforeAll(async () => {
    taskId = await createTask({
      title: "Calibrate arm",
      description: "Use the jig",
      priority: "high",
      start_date: "2026-05-01",
      due_date: "2026-05-31",
      blocked_reason: "Jig missing",
      assigned_to: userId(acme, 0),
    });
  });

  it("changes only the fields sent, attributed to the token's user, with its event", async () => {
    const before = await taskRow(taskId);
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
      token: memberToken,
      body: { title: "Calibrate the arm", priority: "high" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: { id: taskId } });
    const after = await taskRow(taskId);
    expect(after).toEqual({
      ...before,
      title: "Calibrate the arm",
      updatedBy: userId(acme, 1),
      updatedAt: expect.any(Date),
    });
    expect(after.createdBy).toBe(userId(acme, 0));
    expect(after.updatedAt.getTime()).toBeGreaterThan(before.updatedAt.getTime());
    const events = await eventsFor(t.db, taskId);
    // Only the changed field is in the diff: priority was sent unchanged.
    expect(events.at(-1)).toEqual({
      organizationId: acme.organization.id,
      type: "task.updated",
      action: "updated",
      targetKind: "task",
      targetId: taskId,
      actorId: userId(acme, 1),
      diff: { before: { title: "Calibrate arm" }, after: { title: "Calibrate the arm" } },
    });
  });

  it("takes the task id in upper case and answers, and records, the stored spelling", async () => {
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId.toUpperCase()}`, {
      token,
      body: { priority: "high" },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: taskId });
    expect((await eventsFor(t.db, taskId)).at(-1)?.targetId).toBe(taskId);
  });

  it("names the format of a date it refuses", async () => {
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
      token,
      body: { due_date: "May 31" },
    });
    expectInvalidRequest(res);
    expect(res.body.message).toBe("due_date: expected a date as YYYY-MM-DD");
  });

  it("clears nullable fields with null", async () => {
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
      token,
      body: {
        description: null,
        start_date: null,
        due_date: null,
        blocked_reason: null,
        assigned_to: null,
      },
    });
    expect(res.status).toBe(200);
    expect(await taskRow(taskId)).toMatchObject({
      title: "Calibrate the arm",
      priority: "high",
      description: null,
      startDate: null,
      dueDate: null,
      blockedReason: null,
      assignedTo: null,
    });
    expect((await eventsFor(t.db, taskId)).at(-1)?.diff).toEqual({
      before: {
        description: "Use the jig",
        start_date: "2026-05-01",
        due_date: "2026-05-31",
        blocked_reason: "Jig missing",
        assigned_to: userId(acme, 0),
      },
      after: {
        description: null,
        start_date: null,
        due_date: null,
        blocked_reason: null,
        assigned_to: null,
      },
    });
  });

  it("answers 200 to an update that changes nothing, and writes nothing and records no event", async () => {
    const row = await taskRow(taskId);
    const before = await counts();
    const bodies = [{}, { title: row.title, priority: row.priority, due_date: row.dueDate }];
    for (const body of bodies) {
      const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
        token: memberToken,
        body,
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ id: taskId });
      // Not even the stamp moves: nothing was edited.
      expect(await taskRow(taskId)).toEqual(row);
    }
    expect(await counts()).toEqual(before);
  });

  it("lists only the fields that changed in the diff of a partly unchanged update", async () => {
    const row = await taskRow(taskId);
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
      token: memberToken,
      body: { title: row.title, priority: row.priority === "low" ? "high" : "low" },
    });
    expect(res.status).toBe(200);
    const after = await taskRow(taskId);
    expect(after.updatedAt.getTime()).toBeGreaterThan(row.updatedAt.getTime());
    expect((await eventsFor(t.db, taskId)).at(-1)?.diff).toEqual({
      before: { priority: row.priority },
      after: { priority: after.priority },
    });
  });

  it("lets any status follow any other", async () => {
    const statuses = ["not_started", "in_progress", "blocked", "done", "cancelled"];
    for (const from of statuses) {
      for (const to of statuses.filter((status) => status !== from)) {
        for (const status of [from, to]) {
          const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
            token,
            body: { status },
          });
          expect(res.status).toBe(200);
        }
        expect((await taskRow(taskId)).status).toBe(to);
      }
    }
  });

  it("assigns to a current member and refuses anyone else", async () => {
    const ok = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
      token,
      body: { assigned_to: userId(acme, 1) },
    });
    expect(ok.status).toBe(200);
    expect((await taskRow(taskId)).assignedTo).toBe(userId(acme, 1));
    for (const assignee of [userId(other, 0), userId(acme, 2), UNKNOWN_ID]) {
      const row = await taskRow(taskId);
      const before = await counts();
      const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
        token,
        body: { title: "Should not stick", assigned_to: assignee },
      });
      expectInvalidRequest(res);
      expect(res.body.message).toMatch(/^assigned_to: /);
      expect(await taskRow(taskId)).toEqual(row);
      expect(await counts()).toEqual(before);
    }
  });

  const refusals: [string, unknown, string][] = [
    ["a null title", { title: null }, "title"],
    ["a title of 1 character", { title: "x" }, "title"],
    ["a title of 201 characters", { title: "t".repeat(201) }, "title"],
    ["a description of 4001 characters", { description: "d".repeat(4001) }, "description"],
    ["a blocked_reason of 501 characters", { blocked_reason: "b".repeat(501) }, "blocked_reason"],
    ["a null priority", { priority: null }, "priority"],
    ["an unknown status", { status: "archived" }, "status"],
    ["an impossible date", { start_date: "2026-13-01" }, "start_date"],
    ["an unknown field", { project_id: UNKNOWN_ID }, "project_id"],
    ["a client-set timestamp", { updated_at: "2026-01-01T00:00:00Z" }, "updated_at"],
  ];
  it.each(refusals)("refuses %s with a 400 naming the field", async (_name, body, field) => {
    const row = await taskRow(taskId);
    const before = await counts();
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, { token, body });
    expectInvalidRequest(res);
    expect(res.body.message).toContain(`${field}: `);
    expect(await taskRow(taskId)).toEqual(row);
    expect(await counts()).toEqual(before);
  });

  it("accepts the boundaries: title 2 and 200, description 4000, blocked_reason 500", async () => {
    for (const body of [
      { title: "ab" },
      { title: "t".repeat(200) },
      { description: "d".repeat(4000) },
      { blocked_reason: "b".repeat(500) },
    ]) {
      const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, { token, body });
      expect(res.status).toBe(200);
    }
    expect(await taskRow(taskId)).toMatchObject({
      title: "t".repeat(200),
      description: "d".repeat(4000),
      blockedReason: "b".repeat(500),
    });
  });

  it("answers non-uuid, unknown, private and foreign tasks with the same 404 body", async () => {
    const before = await counts();
    const privateRow = await taskRow(privateTaskId);
    const body = await expectOneNotFoundBody(
      ["not-a-uuid", UNKNOWN_ID, privateTaskId, foreignTaskId],
      (id) => api(t.app, "PATCH", `/api/v1/tasks/${id}`, { token, body: { title: "Hijacked" } }),
    );
    expect(JSON.parse(body)).toMatchObject({ ok: false, error: "not_found" });
    expect(await counts()).toEqual(before);
    expect(await taskRow(privateTaskId)).toEqual(privateRow);
  });

  it("checks 401, then 403, then the body, then the task", async () => {
    const url = `/api/v1/tasks/${UNKNOWN_ID}`;
    const bad = { title: null };
    expect((await api(t.app, "PATCH", url, { body: bad })).status).toBe(401);
    const readOnly = await mintToken(t.db, acme, ["tasks:read"]);
    expectInsufficientScope(await api(t.app, "PATCH", url, { token: readOnly, body: bad }));
    expect((await api(t.app, "PATCH", url, { token, body: bad })).status).toBe(400);
    expect((await api(t.app, "PATCH", url, { token, body: {} })).status).toBe(404);
  });

  it("refuses a write from a token whose creator left, changing nothing", async () => {
    const { workspace: ws, token: leaverToken } = await formerMemberToken(
      t.db,
      "leavers",
      { projects: [project("p", { tasks: [{ title: "Stays put" }] })] },
      ["tasks:write"],
    );
    const id = ws.projects[0]?.tasks[0]?.id ?? "";
    const before = await counts();
    const res = await api(t.app, "PATCH", `/api/v1/tasks/${id}`, {
      token: leaverToken,
      body: { title: "Moved" },
    });
    expectInvalidRequest(res);
    expect(res.body.message).toMatch(/author/i);
    expect((await taskRow(id)).title).toBe("Stays put");
    expect(await counts()).toEqual(before);
  });
});

describe("transactions", () => {
  // A constraint that refuses task events makes the outbox insert fail after the task write:
  // the whole write must roll back, so the task exists exactly when its event does.
  async function refusingTaskEvents<T>(action: () => Promise<T>): Promise<T> {
    await t.db.execute(
      sql`alter table change_events add constraint refuse_task_events check (type not like 'task.%') not valid`,
    );
    try {
      return await action();
    } finally {
      await t.db.execute(sql`alter table change_events drop constraint refuse_task_events`);
    }
  }

  it("rolls the task back when its change event cannot be recorded", async () => {
    const taskId = await createTask({ title: "Before the failure" });
    const row = await taskRow(taskId);
    const before = await counts();
    await refusingTaskEvents(async () => {
      await expect(
        api(t.app, "POST", "/api/v1/projects/rover/tasks", { token, body: { title: "Lost" } }),
      ).rejects.toThrow(/answered 500/);
      await expect(
        api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, { token, body: { title: "Lost" } }),
      ).rejects.toThrow(/answered 500/);
    });
    expect(await counts()).toEqual(before);
    expect(await taskRow(taskId)).toEqual(row);
  });
});
