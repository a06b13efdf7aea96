/**
 * The scaling checks: a 2000-row list against a 20-row one, a 2000-page tree, a 20-million-
 * character transcript (cut by the database, so its cost and the heap it takes stay bounded),
 * each against the same read at a small size (the write is measured against its twin instead).
 */
import { createTestApp, type TestApp } from "../test/support/app.js";
import { importFixture, mintToken, workspaceDocument } from "../test/support/fixtures.js";
import { median } from "./processes.js";

const ROUNDS = 40;

async function timeRequests(
  t: TestApp,
  token: string,
  method: "GET" | "POST",
  url: string,
  body?: unknown,
) {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const started = process.hrtime.bigint();
    const res = await t.app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body ? { "content-type": "application/json" } : {}),
      },
      payload: body ? JSON.stringify(body) : undefined,
    });
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (res.statusCode !== 200)
      throw new Error(`${method} ${url} answered ${res.statusCode}: ${res.body}`);
  }
  return median(samples);
}

function project(slug: string, rows: number, transcriptChars: number) {
  return {
    slug,
    name: slug,
    status: "active",
    visibility: "org",
    tasks: Array.from({ length: rows }, (_, i) => ({
      title: `Task ${i}`,
      description: "x".repeat(200),
    })),
    pages: Array.from({ length: Math.ceil(rows / 4) }, (_, i) => ({
      title: `Page ${i}`,
      children: [{ title: `Child ${i}.1` }, { title: `Child ${i}.2` }, { title: `Child ${i}.3` }],
    })),
    meetings: [
      {
        startsAt: "2026-03-02T09:00:00Z",
        durationMinutes: 30,
        status: "done",
        locationType: "room",
        audience: "org",
        transcript: { status: "ready", text: "w".repeat(transcriptChars) },
      },
    ],
  };
}

async function heapGrowthOf(action: () => Promise<unknown>): Promise<number> {
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 1);
  await action();
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  return (peak - before) / 1024 / 1024;
}

export type Target = { name: string; measured: number; limit: number; unit: string };

/**
 * How cost grows with size, in process through `app.inject`: ratios against `GET /me` in the
 * same run, so they hold on any machine.
 */
export async function measureScaling(): Promise<Target[]> {
  const t = await createTestApp({ RATE_LIMIT_MAX: "1000000" });
  try {
    const ws = await importFixture(
      t.db,
      workspaceDocument("bench", {
        projects: [project("small", 20, 1_000), project("large", 2_000, 20_000_000)],
      }),
    );
    const token = await mintToken(t.db, ws);
    const meeting = (slug: string) => ws.projects?.find((p) => p.slug === slug)?.meetings?.[0]?.id;

    const tasksSmall = await timeRequests(t, token, "GET", "/api/v1/projects/small/tasks");
    const tasksLarge = await timeRequests(t, token, "GET", "/api/v1/projects/large/tasks");
    const pagesLarge = await timeRequests(t, token, "GET", "/api/v1/projects/large/pages");
    const transcriptSmall = await timeRequests(
      t,
      token,
      "GET",
      `/api/v1/meetings/${meeting("small")}/transcript`,
    );
    const transcriptLarge = await timeRequests(
      t,
      token,
      "GET",
      `/api/v1/meetings/${meeting("large")}/transcript`,
    );
    const meetingLarge = await timeRequests(
      t,
      token,
      "GET",
      `/api/v1/meetings/${meeting("large")}`,
    );
    const transcriptHeap = await heapGrowthOf(() =>
      t.app.inject({
        method: "GET",
        url: `/api/v1/meetings/${meeting("large")}/transcript`,
        headers: { authorization: `Bearer ${token}` },
      }),
    );

    const pagesSmall = await timeRequests(t, token, "GET", "/api/v1/projects/small/pages");
    const meetingSmall = await timeRequests(
      t,
      token,
      "GET",
      `/api/v1/meetings/${meeting("small")}`,
    );
    const targets: Target[] = [
      // 100x the rows may cost time in proportion, never per-row queries (that would be far worse).
      {
        name: "tasks list, 2000 rows / 20 rows",
        measured: tasksLarge / tasksSmall,
        limit: 60,
        unit: "x",
      },
      {
        name: "page tree, 2000 pages / 20 pages",
        measured: pagesLarge / pagesSmall,
        limit: 60,
        unit: "x",
      },
      // The database cuts a 20M-character transcript to 200000 characters: the cost is bounded.
      {
        name: "transcript 20M chars / 1k chars",
        measured: transcriptLarge / transcriptSmall,
        limit: 40,
        unit: "x",
      },
      {
        name: "meeting detail with a 20M-char transcript / with a 1k one",
        measured: meetingLarge / meetingSmall,
        limit: 2,
        unit: "x",
      },
      {
        name: "heap growth serving a 20M-char transcript",
        measured: transcriptHeap,
        limit: 64,
        unit: "MiB",
      },
    ];
    return targets;
  } finally {
    await t.close();
  }
}
