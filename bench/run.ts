/**
 * `npm run bench`: speed and memory of the API measured as ratios against a baseline taken in
 * the same run (GET /me: token lookup plus envelope), so the numbers mean the same on any
 * machine. Needs the test Postgres (TEST_DATABASE_URL). Exits 1 when a target is missed.
 */
import { createTestApp, type TestApp } from "../test/support/app.js";
import { importFixture, mintToken, workspaceDocument } from "../test/support/fixtures.js";

type Target = { name: string; measured: number; limit: number; unit: string };

const ROUNDS = 40;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

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

async function main(): Promise<void> {
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

    const baseline = await timeRequests(t, token, "GET", "/api/v1/me");
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
    const write = await timeRequests(t, token, "POST", "/api/v1/projects/small/tasks", {
      title: "Bench task",
    });
    const transcriptHeap = await heapGrowthOf(() =>
      t.app.inject({
        method: "GET",
        url: `/api/v1/meetings/${meeting("large")}/transcript`,
        headers: { authorization: `Bearer ${token}` },
      }),
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
        name: "tasks list of 2000 rows / baseline",
        measured: tasksLarge / baseline,
        limit: 80,
        unit: "x",
      },
      {
        name: "page tree of 2000 pages / baseline",
        measured: pagesLarge / baseline,
        limit: 80,
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
        name: "meeting detail with a 20M-char transcript / baseline",
        measured: meetingLarge / baseline,
        limit: 5,
        unit: "x",
      },
      {
        name: "task create with its change event / baseline",
        measured: write / baseline,
        limit: 8,
        unit: "x",
      },
      {
        name: "heap growth serving a 20M-char transcript",
        measured: transcriptHeap,
        limit: 64,
        unit: "MiB",
      },
    ];
    console.log(`baseline GET /me: ${baseline.toFixed(2)} ms (median of ${ROUNDS})`);
    let missed = 0;
    for (const target of targets) {
      const ok = target.measured <= target.limit;
      if (!ok) missed += 1;
      console.log(
        `${ok ? "ok  " : "MISS"} ${target.name}: ${target.measured.toFixed(2)} ${target.unit} (target <= ${target.limit} ${target.unit})`,
      );
    }
    process.exitCode = missed === 0 ? 0 : 1;
  } finally {
    await t.close();
  }
}

await main();
