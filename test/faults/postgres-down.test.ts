import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { eq } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import { changeEvents, tasks } from "../../src/db/schema/index.js";
import {
  importOAuthWorkspaces,
  issueCode,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { type PostgresCluster, startPostgresCluster } from "../support/clusters.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import {
  type Answer,
  call,
  HttpSession,
  openServiceDatabase,
  type ServiceProcess,
  startService,
} from "./service-process.js";

// `svc start` on a PostgreSQL cluster of this file's own, which the tests crash, black-hole and
// lock. Every answer must come back within HANG_MS (see service-process.ts): the service
// promises one within about two seconds, and the margin keeps a loaded machine from failing
// the test while a request that hangs still does.

const STATEMENT_TIMEOUT_MS = 2000;

let cluster: PostgresCluster;
let database: Database;
let service: ServiceProcess;
let token: string;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let admin: HttpSession;

beforeAll(async () => {
  // Only Postgres is stopped: the shared Redis serves, with a queue prefix of this file's own.
  cluster = await startPostgresCluster();
  database = await openServiceDatabase(cluster.url);
  fixtures = await importOAuthWorkspaces(database.db);
  token = await mintToken(database.db, fixtures.acme);
  service = await startService("start", {
    DATABASE_URL: cluster.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `faults-${randomBytes(6).toString("hex")}`,
    RATE_LIMIT_MAX: "100000",
    DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  });
  admin = new HttpSession(service.url);
  await admin.signIn("admin@acme.example", PASSWORD);
}, 90_000);
afterAll(async () => {
  await service?.kill();
  await database?.close();
  await cluster?.destroy();
});

const tasksUrl = () => `${service.url}/api/v1/projects/rover/tasks`;
let reads = 0;
// A URL each, so that every read misses the read cache and needs the database.
const readTasks = () => call(`${tasksUrl()}?read=${reads++}`, { token });
const writeTask = (title: string) => call(tasksUrl(), { token, body: { title } });

function expectUnavailable(answer: Answer): void {
  expect(answer.status, answer.text).toBe(503);
  expect(answer.json()).toEqual({ ok: false, error: "unavailable", message: expect.any(String) });
  expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
}

function expectUnavailablePage(answer: Answer): void {
  expect(answer.status, answer.text).toBe(503);
  expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
  expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
}

type Outcome = { kind: "read" | "write"; answer?: Answer; error?: string };

/** Readers and writers going on, each one request after the other, until `stop`. */
function startTraffic(readers: number, writers: number) {
  const outcomes: Outcome[] = [];
  let going = true;
  let sequence = 0;
  const loop = async (kind: Outcome["kind"]) => {
    while (going) {
      try {
        const answer = kind === "read" ? await readTasks() : await writeTask(`Write ${sequence++}`);
        outcomes.push({ kind, answer });
      } catch (error) {
        outcomes.push({ kind, error: String(error) });
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const loops = [
    ...Array.from({ length: readers }, () => loop("read")),
    ...Array.from({ length: writers }, () => loop("write")),
  ];
  /** How many answers of `kind` with `status` came after the first `from` outcomes. */
  const count = (kind: Outcome["kind"], status: number, from = 0) =>
    outcomes.slice(from).filter((o) => o.kind === kind && o.answer?.status === status).length;
  return {
    outcomes,
    count,
    async stop() {
      going = false;
      await Promise.all(loops);
    },
  };
}

/** Every task has its `task.created` event and every such event its task: no write half done. */
async function expectNoWriteHalfDone(acknowledged: string[]): Promise<void> {
  const rows = await database.db.select({ id: tasks.id }).from(tasks);
  const events = await database.db
    .select({ targetId: changeEvents.targetId })
    .from(changeEvents)
    .where(eq(changeEvents.type, "task.created"));
  const taskIds = rows.map((row) => row.id).toSorted();
  expect(events.map((event) => event.targetId).toSorted()).toEqual(taskIds);
  for (const id of acknowledged) expect(taskIds).toContain(id);
}

describe("PostgreSQL down", () => {
  it("answers 503 unavailable while Postgres is stopped -m immediate, and serves again once it returns, with no write half done", async () => {
    const addon = await registerClient(database.db, fixtures.devco, ["https://gantt.example/cb"]);
    const code = await issueCode(database.db, {
      clientRecordId: addon.id,
      organization: fixtures.acme,
      redirectUri: addon.redirectUri,
      scopes: ["projects:read"],
    });
    const exchange = () =>
      call(`${service.url}/api/v1/oauth/token`, {
        form: {
          grant_type: "authorization_code",
          code,
          redirect_uri: addon.redirectUri,
          client_id: addon.clientId,
          client_secret: addon.clientSecret as string,
        },
      });
    expect((await admin.get("/admin/acme/tokens")).status).toBe(200);

    const traffic = startTraffic(2, 3);
    await eventually(() => traffic.count("write", 200) >= 5 && traffic.count("read", 200) >= 5);
    await cluster.stop("immediate");
    const down = traffic.outcomes.length;
    await eventually(
      () => traffic.count("read", 503, down) >= 3 && traffic.count("write", 503, down) >= 3,
    );

    const token503 = await exchange();
    expect(token503.status, token503.text).toBe(503);
    expect(token503.json()).toEqual({
      error: "temporarily_unavailable",
      error_description: expect.any(String),
    });
    expect(token503.headers.get("retry-after")).toMatch(/^\d+$/);
    expectUnavailablePage(await admin.get("/admin/acme/tokens"));
    expectUnavailablePage(
      await admin.get(
        `/oauth/authorize?${new URLSearchParams({
          client_id: addon.clientId,
          redirect_uri: addon.redirectUri,
          response_type: "code",
          scope: "projects:read",
          state: "s",
        })}`,
      ),
    );
    const notReady = await call(`${service.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(notReady.json().checks).toMatchObject({ database: "unavailable" });

    await cluster.start();
    const up = traffic.outcomes.length;
    // The same process, not restarted, serves again.
    await eventually(
      () => traffic.count("read", 200, up) >= 3 && traffic.count("write", 200, up) >= 3,
    );
    await traffic.stop();

    expect(traffic.outcomes.filter((o) => o.error !== undefined)).toEqual([]);
    const answers = traffic.outcomes.map((o) => o.answer as Answer);
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200, 503]));
    for (const answer of answers.filter((a) => a.status === 503)) expectUnavailable(answer);
    const acknowledged = traffic.outcomes
      .filter((o) => o.kind === "write" && o.answer?.status === 200)
      .map((o) => o.answer?.json().data.id as string);
    await expectNoWriteHalfDone(acknowledged);
    // The exchange refused during the outage did not spend the code.
    const exchanged = await exchange();
    expect(exchanged.status, exchanged.text).toBe(200);
    expect((await admin.get("/admin/acme/tokens")).status).toBe(200);
  });

  it("answers 503 instead of hanging while Postgres accepts connections and never answers", async () => {
    await cluster.stop("fast");
    const held: Socket[] = [];
    const blackHole: Server = createServer((socket) => {
      held.push(socket);
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => blackHole.listen(cluster.port, "127.0.0.1", resolve));
    try {
      expectUnavailable(await readTasks());
      expectUnavailable(await writeTask("Into the black hole"));
      expect((await call(`${service.url}/readyz`)).status).toBe(503);
      expect(held.length).toBeGreaterThan(0);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => blackHole.close(() => resolve()));
    }
    await cluster.start();
    await eventually(async () => (await readTasks()).status === 200);
    const titles = await database.db
      .select()
      .from(tasks)
      .where(eq(tasks.title, "Into the black hole"));
    expect(titles).toEqual([]);
  });

  it("answers 503 when a statement outlasts DATABASE_STATEMENT_TIMEOUT_MS, and writes nothing", async () => {
    const locker = new pg.Client({ connectionString: cluster.url });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("lock table tasks in access exclusive mode");
      expectUnavailable(await readTasks());
      expectUnavailable(await writeTask("Past the statement timeout"));
    } finally {
      await locker.query("rollback");
      await locker.end();
    }
    expect((await readTasks()).status).toBe(200);
    const written = await database.db
      .select({ id: tasks.id })
      .from(tasks)
      .where(eq(tasks.title, "Past the statement timeout"));
    expect(written).toEqual([]);
    await expectNoWriteHalfDone([]);
  });
});
