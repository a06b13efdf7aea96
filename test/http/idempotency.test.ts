import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, idempotencyKeys, tasks } from "../../src/db/schema/index.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";
import { countRows } from "../support/row-counts.js";

let t: TestApp;
let ws: Workspace;
let token: string;
let keyNumber = 0;

beforeAll(async () => {
  // Statements time out quickly so a locked row can make a write fail with a 503.
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" }, { pool: { statementTimeoutMs: 1000 } });
  ws = await importFixture(
    t.db,
    workspaceDocument("idem", {
      projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
    }),
  );
  token = await mintToken(t.db, ws);
});
afterAll(() => t.close());

const newKey = () => `key-${++keyNumber}-${Date.now()}`;

function createTask(key: string | undefined, body: unknown, options: { token?: string } = {}) {
  return api(t.app, "POST", "/api/v1/projects/rover/tasks", {
    token: options.token ?? token,
    body,
    headers: key === undefined ? {} : { "idempotency-key": key },
  });
}

const writes = () => countRows(t.db, { tasks, changeEvents });

describe("Idempotency-Key on a POST", () => {
  it("answers a retry with the first response, replayed, and writes once", async () => {
    const key = newKey();
    const first = await createTask(key, { title: "Only once" });
    expect(first.status).toBe(200);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const before = await writes();
    const retry = await createTask(key, { title: "Only once" });
    expect(retry.status).toBe(200);
    expect(retry.raw).toBe(first.raw);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.headers["content-type"]).toBe(first.headers["content-type"]);
    expect(await writes()).toEqual(before);
  });

  it("treats the same values in another key order as the same request", async () => {
    const key = newKey();
    const first = await createTask(key, { title: "Ordered", description: "d" });
    const retry = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      payload: '{"description":"d","title":"Ordered"}',
      headers: { "idempotency-key": key, "content-type": "application/json" },
    });
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expect(retry.raw).toBe(first.raw);
  });

  it("refuses the key with another body, or on another path, with 400 naming it", async () => {
    const key = newKey();
    expect((await createTask(key, { title: "First body" })).status).toBe(200);
    const before = await writes();
    const other = await createTask(key, { title: "Second body" });
    expect(other.status).toBe(400);
    expect(other.body).toEqual({
      ok: false,
      error: "invalid_request",
      message: expect.stringMatching(/^Idempotency-Key: .*already used with another request/),
    });
    const elsewhere = await api(t.app, "POST", "/api/v1/projects/nowhere/tasks", {
      token,
      body: { title: "First body" },
      headers: { "idempotency-key": key },
    });
    expect(elsewhere.status).toBe(400);
    expect(await writes()).toEqual(before);
  });

  it("gives each token its own keys", async () => {
    const key = newKey();
    const other = await mintToken(t.db, ws);
    const mine = await createTask(key, { title: "Per token" });
    const theirs = await createTask(key, { title: "Per token" }, { token: other });
    expect(theirs.status).toBe(200);
    expect(theirs.headers["idempotent-replayed"]).toBeUndefined();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
  });

  it("writes once when requests with one key arrive together; the others wait their turn with 409", async () => {
    const key = newKey();
    const before = await writes();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => createTask(key, { title: "Together" })),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true);
    for (const answer of answers.filter((a) => a.status === 409)) {
      expect(answer.body).toEqual({ ok: false, error: "conflict", message: expect.any(String) });
    }
    const created = new Set(answers.filter((a) => a.status === 200).map((a) => a.body.data.id));
    expect(created.size).toBe(1);
    const after = await writes();
    expect(after.tasks - before.tasks).toBe(1);
    expect(after.changeEvents - before.changeEvents).toBe(1);
    // Once the first has finished, a retry is its replay.
    expect((await createTask(key, { title: "Together" })).headers["idempotent-replayed"]).toBe(
      "true",
    );
  });

  it("refuses a key longer than 255 characters, or empty, with 400 naming the header", async () => {
    for (const key of ["k".repeat(256), ""]) {
      const res = await createTask(key, { title: "Bad key" });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.message).toMatch(/^idempotency-key: /);
    }
    expect((await createTask("k".repeat(255), { title: "Longest key" })).status).toBe(200);
  });

  it("stores nothing for a request refused by validation, so the corrected one runs", async () => {
    const key = newKey();
    expect((await createTask(key, { title: "" })).status).toBe(400);
    const corrected = await createTask(key, { title: "Corrected" });
    expect(corrected.status).toBe(200);
    expect(corrected.headers["idempotent-replayed"]).toBeUndefined();
  });

  it("replays a 404 the write itself decided", async () => {
    const key = newKey();
    const send = () =>
      api(t.app, "POST", "/api/v1/projects/nowhere/tasks", {
        token,
        body: { title: "Lost" },
        headers: { "idempotency-key": key },
      });
    const first = await send();
    expect(first.status).toBe(404);
    const retry = await send();
    expect(retry.status).toBe(404);
    expect(retry.raw).toBe(first.raw);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
  });

  it("stores nothing for a 5xx, so a later retry can succeed", async () => {
    const key = newKey();
    const locker = new pg.Client({ connectionString: t.config.databaseUrl });
    await locker.connect();
    try {
      // The project's row locked: the task's insert waits past the statement timeout.
      await locker.query("begin");
      await locker.query("lock table tasks in exclusive mode");
      const failed = await createTask(key, { title: "After the outage" });
      expect(failed.status).toBe(503);
      await locker.query("rollback");
    } finally {
      await locker.end();
    }
    const retry = await createTask(key, { title: "After the outage" });
    expect(retry.status).toBe(200);
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
  });

  it("forgets a key after 24 hours", async () => {
    const key = newKey();
    const first = await createTask(key, { title: "Yesterday" });
    await t.db
      .update(idempotencyKeys)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(sql`${idempotencyKeys.key} = ${key}`);
    const later = await createTask(key, { title: "Yesterday" });
    expect(later.status).toBe(200);
    expect(later.headers["idempotent-replayed"]).toBeUndefined();
    expect(later.body.data.id).not.toBe(first.body.data.id);
  });

  it("leaves POSTs without a key as they were", async () => {
    const before = await writes();
    await createTask(undefined, { title: "No key" });
    await createTask(undefined, { title: "No key" });
    expect((await writes()).tasks - before.tasks).toBe(2);
  });
});

describe("the OpenAPI document", () => {
  it("declares the Idempotency-Key header and the 409 on every authenticated POST", async () => {
    const document = (await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).json();
    const posts = Object.entries(document.paths as Record<string, Record<string, any>>)
      .filter(
        ([, methods]) => methods.post !== undefined && (methods.post.security ?? []).length > 0,
      )
      .map(([path, methods]) => ({ path, post: methods.post }));
    expect(posts.length).toBeGreaterThan(3);
    for (const { path, post } of posts) {
      const header = post.parameters?.find(
        (parameter: { in: string; name: string }) =>
          parameter.in === "header" && parameter.name === "idempotency-key",
      );
      expect(header, path).toMatchObject({ required: false, schema: { maxLength: 255 } });
      expect(Object.keys(post.responses), path).toContain("409");
    }
  });
});
