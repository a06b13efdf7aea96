/**
 * The API side by side with the stack's limit: the service started with `npm start` in
 * production mode on real PostgreSQL and Redis, seeded through `svc import`, and the bare twin
 * (bench/twin.ts) answering the same URLs with the same bytes from one indexed lookup each, and
 * the write with the same INSERTs; autocannon drives each from a process of its own, in
 * alternating rounds, and the median round counts.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Round, RoundResult } from "./load.js";
import { scrapeEvery15Seconds, withMetricsListener } from "./metrics-scrape.js";
import {
  createDatabase,
  freePort,
  median,
  ROOT,
  type Started,
  samplePeakRss,
  startProcess,
  stopProcess,
  svc,
  waitForOk,
} from "./processes.js";

const CONNECTIONS = 50;
const ROUND_SECONDS = 4;
const WARMUP_SECONDS = 2;
const ROUNDS = 5;

type Measured = { requestsPerSecond: number; p50: number; p99: number };
type EndpointResult = {
  name: string;
  write: boolean;
  service: Measured;
  twin: Measured;
  /** Peak RSS of the service's process tree (npm and node) while this endpoint was loaded. */
  peakRssMiB: number;
};

export type ApiResults = { endpoints: EndpointResult[]; peakRssMiB: number };

const TRANSCRIPT_CHARACTERS = 20_000;

/**
 * The bench workspace: one project of 100 tasks, a page of 40 list items among a tree of 40
 * pages, 50 documents, a transcript.
 */
function benchWorkspace(organization: string) {
  const words = "status update about the rover wheels and the next test campaign ";
  return {
    organization: { slug: organization, name: "Bench" },
    users: [
      { email: `admin@${organization}.example`, name: "Ada", role: "admin", password: "bench" },
    ],
    projects: [
      {
        slug: "rover",
        name: "Rover",
        status: "active",
        visibility: "org",
        tasks: Array.from({ length: 100 }, (_, i) => ({
          title: `Task ${i + 1}`,
          description: `Check item ${i + 1}: ${words}`,
          due_date: "2026-06-01",
        })),
        pages: [
          {
            title: "Checklist",
            markdown: [
              "# Launch checklist",
              ...Array.from({ length: 40 }, (_, i) => `- item ${i + 1}: ${words.trim()}`),
            ].join("\n"),
          },
          // 39 more, three levels deep: 3 sections of 3 chapters of 3 notes each.
          ...Array.from({ length: 3 }, (_, a) => ({
            title: `Section ${a + 1}`,
            children: Array.from({ length: 3 }, (_, b) => ({
              title: `Chapter ${a + 1}.${b + 1}`,
              children: Array.from({ length: 3 }, (_, c) => ({
                title: `Note ${a + 1}.${b + 1}.${c + 1}`,
              })),
            })),
          })),
        ],
        documents: Array.from({ length: 50 }, (_, i) => ({
          category: i % 2 === 0 ? "documentation" : "research",
          kind: "link",
          title: `Reference ${i + 1}`,
          description: `About ${words.trim()}`,
          url: `https://docs.example.com/rover/${i + 1}`,
        })),
        meetings: [
          {
            title: "Review",
            startsAt: "2026-03-02T09:00:00Z",
            durationMinutes: 30,
            status: "done",
            locationType: "room",
            audience: "org",
            transcript: {
              status: "ready",
              text: words.repeat(Math.ceil(TRANSCRIPT_CHARACTERS / words.length)),
            },
          },
        ],
      },
    ],
  };
}

type Endpoint = { name: string; method: "GET" | "POST"; path: string; body?: string };

function endpointsOf(imported: {
  projects: { pages: { id: string }[]; meetings: { id: string }[] }[];
}): Endpoint[] {
  const rover = imported.projects[0];
  if (rover === undefined) throw new Error("the bench project was not imported");
  return [
    { name: "GET /me", method: "GET", path: "/api/v1/me" },
    { name: "GET /projects", method: "GET", path: "/api/v1/projects" },
    {
      name: "GET /projects/{slug}/tasks (100)",
      method: "GET",
      path: "/api/v1/projects/rover/tasks",
    },
    {
      name: "GET /projects/{slug}/pages (40)",
      method: "GET",
      path: "/api/v1/projects/rover/pages",
    },
    {
      name: "GET /projects/{slug}/documents (50)",
      method: "GET",
      path: "/api/v1/projects/rover/documents",
    },
    {
      name: "GET /pages/{id} (40 items)",
      method: "GET",
      path: `/api/v1/pages/${rover.pages[0]?.id}`,
    },
    {
      name: "GET /meetings/{id}/transcript",
      method: "GET",
      path: `/api/v1/meetings/${rover.meetings[0]?.id}/transcript`,
    },
    {
      name: "POST /projects/{slug}/tasks",
      method: "POST",
      path: "/api/v1/projects/rover/tasks",
      body: JSON.stringify({ title: "Bench task" }),
    },
  ];
}

async function loadRound(round: Round): Promise<RoundResult> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", path.join(ROOT, "bench/load.ts"), JSON.stringify(round)],
    { cwd: ROOT, maxBuffer: 1024 * 1024 },
  );
  const result = JSON.parse(stdout) as RoundResult;
  if (result.failures > 0) {
    throw new Error(`${round.method} ${round.url}: ${result.failures} failed requests`);
  }
  return result;
}

function medianOf(results: RoundResult[]): Measured {
  return {
    requestsPerSecond: median(results.map((result) => result.requestsPerSecond)),
    p50: median(results.map((result) => result.p50)),
    p99: median(results.map((result) => result.p99)),
  };
}

/** The same bytes from both, or the comparison means nothing. */
async function checkSameBytes(endpoint: Endpoint, service: string, twin: string, token: string) {
  if (endpoint.method !== "GET") return;
  const get = async (base: string) =>
    (
      await fetch(`${base}${endpoint.path}`, { headers: { authorization: `Bearer ${token}` } })
    ).text();
  const [fromService, fromTwin] = await Promise.all([get(service), get(twin)]);
  if (fromService !== fromTwin) {
    throw new Error(
      `${endpoint.name}: the twin's bytes differ\nservice: ${fromService.slice(0, 300)}\ntwin:    ${fromTwin.slice(0, 300)}`,
    );
  }
}

export async function measureApi(
  settings: { databaseUrl: string; redisUrl: string },
  log: (line: string) => void,
): Promise<ApiResults> {
  const database = await createDatabase(settings.databaseUrl);
  const organization = "bench";
  const [servicePort, twinPort] = await Promise.all([freePort(), freePort()]);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: "production",
    SECRET_KEY: randomBytes(32).toString("base64"),
    DATABASE_URL: database.url,
    REDIS_URL: settings.redisUrl,
    QUEUE_PREFIX: `bench-${randomBytes(4).toString("hex")}`,
    PORT: String(servicePort),
    // The limit is checked on every request as in production, set high enough not to refuse.
    RATE_LIMIT_MAX: "1000000000",
    // `READ_CACHE_MAX_CHARACTERS=0 npm run bench -- api` measures the reads with the cache off.
    ...(process.env.READ_CACHE_MAX_CHARACTERS === undefined
      ? {}
      : { READ_CACHE_MAX_CHARACTERS: process.env.READ_CACHE_MAX_CHARACTERS }),
  };
  const processes: Started[] = [];
  try {
    log("api: seeding the bench database through svc import");
    await svc(["migrate"], env);
    const file = path.join(tmpdir(), `bench-${randomBytes(4).toString("hex")}.json`);
    writeFileSync(file, JSON.stringify(benchWorkspace(organization)));
    const imported = JSON.parse(
      await svc(["import", file, "--json"], env).finally(() => rmSync(file, { force: true })),
    );
    const minted = JSON.parse(
      await svc(
        [
          "token",
          "create",
          "--org",
          organization,
          "--user",
          `admin@${organization}.example`,
          "--scopes",
          "all",
          "--json",
        ],
        env,
      ),
    ) as { token: string };
    const observed = await withMetricsListener(env);
    const service = startProcess("npm", ["start"], observed.env);
    processes.push(service);
    const stopScraping = scrapeEvery15Seconds(observed.metricsUrl);
    const serviceUrl = `http://127.0.0.1:${servicePort}`;
    const twinUrl = `http://127.0.0.1:${twinPort}`;
    await waitForOk(`${serviceUrl}/readyz`, service);
    const endpoints = endpointsOf(imported);
    const twin = startProcess(process.execPath, ["--import", "tsx", "bench/twin.ts"], {
      ...env,
      PORT: String(twinPort),
      ORGANIZATION: organization,
      AUTHOR: `admin@${organization}.example`,
      SERVICE_URL: serviceUrl,
      TOKEN: minted.token,
      READ_PATHS: JSON.stringify(endpoints.filter((e) => e.method === "GET").map((e) => e.path)),
    });
    processes.push(twin);
    await waitForOk(`${twinUrl}/api/v1/me`, twin);
    const headers = {
      authorization: `Bearer ${minted.token}`,
      "content-type": "application/json",
    };
    const round = (endpoint: Endpoint, base: string, seconds: number): Round => ({
      url: `${base}${endpoint.path}`,
      method: endpoint.method,
      headers,
      body: endpoint.body,
      connections: CONNECTIONS,
      seconds,
    });
    // Both answer every read before any is measured: otherwise the first one measured also
    // measures the start (code still compiling, heaps still growing), which a process in
    // production has long left behind. The write is left out: it would lengthen the task list.
    for (const endpoint of endpoints.filter((e) => e.method === "GET")) {
      await loadRound(round(endpoint, serviceUrl, WARMUP_SECONDS));
      await loadRound(round(endpoint, twinUrl, WARMUP_SECONDS));
    }
    const results: EndpointResult[] = [];
    for (const endpoint of endpoints) {
      const stopSampling = samplePeakRss(service.child.pid ?? 0);
      await checkSameBytes(endpoint, serviceUrl, twinUrl, minted.token);
      await loadRound(round(endpoint, serviceUrl, WARMUP_SECONDS));
      await loadRound(round(endpoint, twinUrl, WARMUP_SECONDS));
      const serviceRounds: RoundResult[] = [];
      const twinRounds: RoundResult[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        serviceRounds.push(await loadRound(round(endpoint, serviceUrl, ROUND_SECONDS)));
        twinRounds.push(await loadRound(round(endpoint, twinUrl, ROUND_SECONDS)));
      }
      const result = {
        name: endpoint.name,
        write: endpoint.method === "POST",
        service: medianOf(serviceRounds),
        twin: medianOf(twinRounds),
        peakRssMiB: stopSampling(),
      };
      log(
        `api: ${result.name}: ${Math.round(result.service.requestsPerSecond)} req/s (twin ${Math.round(result.twin.requestsPerSecond)})`,
      );
      results.push(result);
    }
    stopScraping();
    const peakRssMiB = Math.max(...results.map((result) => result.peakRssMiB));
    return { endpoints: results, peakRssMiB };
  } finally {
    for (const started of processes) await stopProcess(started);
    await database.drop();
  }
}
