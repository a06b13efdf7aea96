import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadCache } from "../../src/http/read-cache.js";
import { api } from "../support/api.js";
import { createSiblingApp, createTestApp, type TestApp } from "../support/app.js";
import { eventually } from "../support/eventually.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";

// Reads are answered from memory after their first answer, without weakening what a reader
// sees: the instance that writes reads its write at once, every other instance as soon as it
// hears the change, whoever made it, and an instance that may have missed a change keeps nothing.

let a: TestApp;
let b: TestApp;
let acme: Workspace;
let acmeToken: string;
let globexToken: string;
let counting = false;
let queries = 0;

beforeAll(async () => {
  a = await createTestApp(
    { RATE_LIMIT_MAX: "100000" },
    { onQuery: () => (counting ? queries++ : undefined) },
  );
  b = await createSiblingApp(a);
  acme = await importOrganization(a.db, "acme", {
    projects: [
      project("rover", {
        tasks: [{ title: "Wheels" }],
        pages: [{ title: "Plan", markdown: "Drive north" }],
        meetings: [
          {
            startsAt: "2026-03-02T09:00:00Z",
            durationMinutes: 30,
            status: "done",
            locationType: "room",
            audience: "org",
            transcript: { status: "ready", text: "first words" },
          },
        ],
      }),
    ],
  });
  const globex = await importOrganization(a.db, "globex", {
    projects: [project("rover", { tasks: [{ title: "Globex wheels" }] })],
  });
  acmeToken = await mintToken(a.db, acme);
  globexToken = await mintToken(a.db, globex);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const read = async (t: TestApp, url: string, token = acmeToken) => {
  const response = await api(t.app, "GET", url, { token });
  expect(response.status, url).toBe(200);
  return response.body.data;
};
const taskTitles = async (t: TestApp, token = acmeToken): Promise<string[]> =>
  (await read(t, "/api/v1/projects/rover/tasks", token)).map(
    (task: { title: string }) => task.title,
  );

// First: the last test below drops the listening connection, which these caches share.
describe("the kept answers' bounds", () => {
  const heard = async (limits: { maxCharacters: number; maxAgeMs: number }) => {
    const cache = new ReadCache(limits);
    await cache.start(a.database);
    return cache;
  };

  it("keep at most READ_CACHE_MAX_CHARACTERS, dropping the oldest first", async () => {
    const cache = await heard({ maxCharacters: 10, maxAgeMs: 60_000 });
    const now = Date.now();
    cache.keep("org", "/one", "12345", cache.changesNow);
    cache.keep("org", "/two", "123456", cache.changesNow);
    cache.keep("org", "/huge", "12345678901", cache.changesNow);
    expect(cache.lookup("org", "/one", now)).toBeUndefined();
    expect(cache.lookup("org", "/two", now)).toBe("123456");
    expect(cache.lookup("org", "/huge", now)).toBeUndefined();
    await cache.stop();
  });

  it("serve an answer for READ_CACHE_MAX_AGE_MS at most", async () => {
    const cache = await heard({ maxCharacters: 100, maxAgeMs: 1000 });
    cache.keep("org", "/one", "answer", cache.changesNow);
    expect(cache.lookup("org", "/one", Date.now() + 999)).toBe("answer");
    expect(cache.lookup("org", "/one", Date.now() + 1000)).toBeUndefined();
    await cache.stop();
  });

  it("refuse an answer read while something changed", async () => {
    const cache = await heard({ maxCharacters: 100, maxAgeMs: 60_000 });
    const before = cache.changesNow;
    cache.forgetOrganization("another");
    cache.keep("org", "/one", "stale", before);
    expect(cache.lookup("org", "/one", Date.now())).toBeUndefined();
    await cache.stop();
  });
});

describe("a kept answer", () => {
  it("answers a repeated read without a query, with the same bytes", async () => {
    const url = `/api/v1/pages/${acme.projects?.[0]?.pages?.[0]?.id}`;
    const first = await api(a.app, "GET", url, { token: acmeToken });
    counting = true;
    queries = 0;
    const again = await api(a.app, "GET", url, { token: acmeToken });
    counting = false;
    expect(queries).toBe(0);
    expect(again.raw).toBe(first.raw);
    expect(again.headers["content-type"]).toBe(first.headers["content-type"]);
  });

  it("is never another organisation's, on the same URL", async () => {
    expect(await taskTitles(a)).toContain("Wheels");
    expect(await taskTitles(a, globexToken)).toEqual(["Globex wheels"]);
    expect(await taskTitles(a)).not.toContain("Globex wheels");
  });

  it("is forgotten by the instance that writes before it answers the write", async () => {
    await taskTitles(a);
    const created = await api(a.app, "POST", "/api/v1/projects/rover/tasks", {
      token: acmeToken,
      body: { title: "Axles" },
    });
    expect(created.status).toBe(200);
    expect(await taskTitles(a)).toContain("Axles");
  });

  it("is forgotten by every other instance once it hears the write", async () => {
    await taskTitles(b);
    await api(a.app, "POST", "/api/v1/projects/rover/tasks", {
      token: acmeToken,
      body: { title: "Mast" },
    });
    await eventually(async () => (await taskTitles(b)).includes("Mast"));
  });

  it("is forgotten after a write by plain SQL, to any table a read returns", async () => {
    const meeting = acme.projects?.[0]?.meetings?.[0]?.id;
    const transcriptUrl = `/api/v1/meetings/${meeting}/transcript`;
    expect((await read(a, transcriptUrl)).text).toBe("first words");
    await taskTitles(a);
    await a.db.execute(sql`update transcripts set text = 'second words'`);
    await a.db.execute(sql`update tasks set title = 'Tyres' where title = 'Wheels'`);
    await eventually(async () => (await read(a, transcriptUrl)).text === "second words");
    await eventually(async () => (await taskTitles(a)).includes("Tyres"));
  });

  it("is forgotten before a write through the process's own pool returns, whoever wrote it", async () => {
    await taskTitles(a);
    for (let i = 0; i < 50; i++) {
      await a.db.execute(sql`update tasks set title = ${`Lap ${i}`} where title = 'Mast'
        or title like 'Lap %'`);
      expect(await taskTitles(a)).toContain(`Lap ${i}`);
    }
  });

  it("is never served once its project turns private", async () => {
    await taskTitles(b);
    await a.db.execute(sql`update projects set visibility = 'private'
      where slug = 'rover' and organization_id = ${acme.organization.id}`);
    try {
      await eventually(
        async () =>
          (await api(b.app, "GET", "/api/v1/projects/rover/tasks", { token: acmeToken })).status ===
          404,
      );
    } finally {
      await a.db.execute(sql`update projects set visibility = 'org'
        where slug = 'rover' and organization_id = ${acme.organization.id}`);
    }
  });

  it("is not kept, nor served, while the instance may miss a change", async () => {
    await taskTitles(a);
    await taskTitles(b);
    // Every listening connection drops; a change made meanwhile may go unheard.
    await a.db.execute(sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and query ilike 'listen%'`);
    await a.db.execute(sql`update tasks set title = 'Unheard' where title = 'Axles'`);
    await eventually(async () => (await taskTitles(a)).includes("Unheard"));
    await eventually(async () => (await taskTitles(b)).includes("Unheard"));
  });
});
