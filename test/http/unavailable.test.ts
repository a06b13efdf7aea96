import { type AddressInfo, connect } from "node:net";
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { rowsOf } from "../../src/db/client.js";
import { openPostgres } from "../../src/db/postgres.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { eventually } from "../support/eventually.js";
import { importFixture, mintToken, workspaceDocument } from "../support/fixtures.js";

/** A well-formed token nobody could check: the database holding it is away. */
const SOME_TOKEN = `svc_live_${"a".repeat(43)}`;

describe("a database that cannot be reached", () => {
  let t: TestApp;
  let unreachable: ReturnType<typeof openPostgres>;
  let app: Awaited<ReturnType<typeof buildApp>>;

  beforeAll(async () => {
    t = await createTestApp();
    unreachable = openPostgres("postgres://postgres@127.0.0.1:1/none");
    app = await buildApp({
      config: t.config,
      database: unreachable,
      logger: pino({ level: "silent" }),
      queue: t.app.queue,
    });
  });
  afterAll(async () => {
    await app.close();
    await unreachable.close();
    await t.close();
  });

  it("answers API reads and writes 503 unavailable with Retry-After, not 500", async () => {
    for (const [method, url, body] of [
      ["GET", "/api/v1/me", undefined],
      ["GET", "/api/v1/projects", undefined],
      ["POST", "/api/v1/projects/rover/tasks", { title: "Not now" }],
    ] as const) {
      const res = await api(app, method, url, { token: SOME_TOKEN, body });
      expect(res.status, `${method} ${url}`).toBe(503);
      expect(res.body).toEqual({ ok: false, error: "unavailable", message: expect.any(String) });
      expect(res.headers["retry-after"]).toBe("5");
    }
  });

  it("answers the token endpoint 503 temporarily_unavailable in the OAuth format", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/api/v1/oauth/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload:
        "grant_type=authorization_code&code=abc&redirect_uri=https%3A%2F%2Fa.example%2Fcb&client_id=c&client_secret=s",
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      error: "temporarily_unavailable",
      error_description: expect.any(String),
    });
    expect(res.headers["retry-after"]).toBe("5");
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  it("answers browser pages, signed in or not, with an HTML 503", async () => {
    await importOAuthWorkspaces(t.db);
    const signedIn = new InjectSession(t.app);
    await signedIn.signIn("admin@acme.example", PASSWORD);
    // The same session cookie, presented to the instance whose database is away.
    const visitor = new InjectSession(app);
    for (const [name, value] of signedIn.cookies) visitor.cookies.set(name, value);
    for (const url of [
      "/oauth/authorize?response_type=code&client_id=c&redirect_uri=https%3A%2F%2Fa.example%2Fcb&scope=projects%3Aread&state=s",
      "/admin/acme/connections",
    ]) {
      const res = await visitor.get(url);
      expect(res.statusCode, url).toBe(503);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.headers["retry-after"]).toBe("5");
      expect(res.body).toContain("Service unavailable");
    }
  });
});

describe("a database too slow or too busy", () => {
  let t: TestApp;
  let token: string;
  let taskId: string;
  let locker: pg.Client;
  // Outside the locker's transaction, which would keep seeing one snapshot of pg_stat_activity.
  let watcher: pg.Client;

  beforeAll(async () => {
    // One connection: a statement that held it past its timeout would starve the next request.
    t = await createTestApp(
      {},
      { pool: { poolSize: 1, statementTimeoutMs: 500, connectTimeoutMs: 300 } },
    );
    const ws = await importFixture(
      t.db,
      workspaceDocument("slowdb", {
        projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
      }),
    );
    token = await mintToken(t.db, ws);
    const created = await api(t.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Locked" },
    });
    expect(created.status).toBe(200);
    taskId = created.body.data.id;
    locker = new pg.Client({ connectionString: t.config.databaseUrl });
    watcher = new pg.Client({ connectionString: t.config.databaseUrl });
    await Promise.all([locker.connect(), watcher.connect()]);
  });
  afterAll(async () => {
    await Promise.all([locker.end(), watcher.end()]);
    await t.close();
  });

  /** Holds the task's row lock in another session until the returned function is called. */
  async function lockTask(): Promise<() => Promise<void>> {
    await locker.query("begin");
    await locker.query("select id from tasks where id = $1 for update", [taskId]);
    return async () => {
      await locker.query("rollback");
    };
  }

  it("sets the statement and idle-in-transaction timeouts on every connection", async () => {
    const shown = await t.database.db.execute(
      "select current_setting('statement_timeout') as statement, current_setting('idle_in_transaction_session_timeout') as idle",
    );
    expect(rowsOf(shown)[0]).toEqual({ statement: "500ms", idle: "10s" });
  });

  it("answers a statement past its timeout with 503, and gives its connection back", async () => {
    const release = await lockTask();
    try {
      const res = await api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
        token,
        body: { title: "Waited too long" },
      });
      expect(res.status).toBe(503);
      expect(res.body.error).toBe("unavailable");
      expect(res.headers["retry-after"]).toBe("5");
    } finally {
      await release();
    }
    const after = await api(t.app, "GET", "/api/v1/projects/rover/tasks", { token });
    expect(after.status).toBe(200);
    expect(after.body.data.map((task: { title: string }) => task.title)).toEqual(["Locked"]);
  });

  it("answers 503 when no connection of the pool comes free in time", async () => {
    const release = await lockTask();
    try {
      // The PATCH holds the only connection, waiting on the lock; the read cannot get one.
      const blocked = api(t.app, "PATCH", `/api/v1/tasks/${taskId}`, {
        token,
        body: { title: "Holding the pool" },
      });
      await eventually(async () => {
        const waiting = await watcher.query(
          `select 1 from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return waiting.rowCount !== 0;
      });
      const starved = await api(t.app, "GET", "/api/v1/projects", { token });
      expect(starved.status).toBe(503);
      expect(starved.body.error).toBe("unavailable");
      expect((await blocked).status).toBe(503);
    } finally {
      await release();
    }
    expect((await api(t.app, "GET", "/api/v1/projects", { token })).status).toBe(200);
  });
});

describe("a process that is stopping", () => {
  it("answers a request that reaches it while it closes with the 503 envelope, Connection: close and CORS", async () => {
    const t = await createTestApp();
    const ws = await importFixture(
      t.db,
      workspaceDocument("closing", {
        projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
      }),
    );
    const token = await mintToken(t.db, ws);
    await t.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = t.app.server.address() as AddressInfo;
    // The first request's body is still arriving when the app starts closing; the second,
    // pipelined behind it, is read once the first is answered.
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => (received += chunk.toString()));
    const ended = new Promise((resolve) => socket.on("close", resolve));
    const body = JSON.stringify({ title: "Written while closing" });
    socket.write(
      `POST /api/v1/projects/rover/tasks HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const closed = t.app.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write(
      `${body.slice(5)}GET /api/v1/projects HTTP/1.1\r\nHost: localhost\r\nOrigin: https://addon.example\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    await Promise.all([closed, ended]);
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /);
    expect(answers[1]).toMatch(/\r\nretry-after: 5\r\n/i);
    expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i);
    // A browser addon on another origin can read why it was refused.
    expect(answers[1]).toMatch(/\r\naccess-control-allow-origin: \*\r\n/i);
    expect(answers[1]).toMatch(/\r\naccess-control-expose-headers: [^\r]*Retry-After/i);
    expect(JSON.parse(answers[1]?.split("\r\n\r\n")[1] ?? "")).toEqual({
      ok: false,
      error: "unavailable",
      message: expect.stringMatching(/restarting/),
    });
    await t.close();
  });
});
