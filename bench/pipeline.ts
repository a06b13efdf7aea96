/**
 * The webhook pipeline as a receiver feels it: the service started with `npm start` on real
 * PostgreSQL and Redis, 10 webhooks on a local receiver, tasks created through the API. It
 * reports commit → arrival (the write's response to the receiver's arrival) at a steady rate,
 * the same for the 9 healthy webhooks when the 10th never answers, deliveries/s in a
 * burst, the daily pass re-sending 10,000 failed deliveries, the same latency in the embedded
 * mode, and in every phase the deliveries lost and those sent twice.
 *
 * The service runs with NODE_ENV unset: production refuses loopback receivers (SSRF rules), and
 * nothing else on the delivery path depends on NODE_ENV.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { Queue } from "bullmq";
import pg from "pg";
import {
  createDatabase,
  freePort,
  ROOT,
  type Started,
  startProcess,
  stopProcess,
  svc,
  waitForOk,
} from "./processes.js";

const WEBHOOKS = 10;
const STEADY_RATE = 50;
const STEADY_SECONDS = 10;
const BURST_WRITES = 300;
const BURST_CONCURRENCY = 25;
const FAILED_DELIVERIES = 10_000;
const EMBEDDED_RATE = 20;
const EMBEDDED_SECONDS = 5;
const ARRIVAL_DEADLINE_MS = 120_000;
// Issue 23's measure: healthy deliveries still missing this long after the last write.
const SILENT_CASE_DEADLINE_MS = Number(process.env.BENCH_SILENT_DEADLINE_MS ?? 60_000);

type Counts = { expected: number; lost: number; sentTwice: number };
type Latency = Counts & { p50: number; p95: number; p99: number };
export type PipelineResults = {
  workerConcurrency: string;
  steady: Latency;
  /** The 9 healthy webhooks' deliveries while the 10th never answers. */
  oneSilent: Latency;
  burst: Counts & { deliveriesPerSecond: number };
  retryPass: Counts & { seconds: number };
  embedded: Latency;
};

type Arrival = { deliveryId: string; targetId: string; hook: string; at: number };

/** A real HTTP receiver: answers 200 at once and notes each arrival; never answers on /silent. */
class Receiver {
  readonly arrivals: Arrival[] = [];
  private readonly server: Server;

  constructor() {
    this.server = createServer((request, response) => {
      if (request.url?.startsWith("/silent")) return;
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const at = performance.now();
        const payload = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { target_id: string };
        this.arrivals.push({
          deliveryId: String(request.headers["x-service-delivery"]),
          targetId: payload.target_id,
          hook: request.url ?? "",
          at,
        });
        response.writeHead(200).end();
      });
    });
    this.server.keepAliveTimeout = 60_000;
  }

  async listen(): Promise<number> {
    const port = await freePort();
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
    return port;
  }

  since(index: number): Arrival[] {
    return this.arrivals.slice(index);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

/** Waits until `count` distinct deliveries arrived after `from`, or the deadline passes. */
async function awaitArrivals(
  receiver: Receiver,
  from: number,
  count: number,
  deadlineMs = ARRIVAL_DEADLINE_MS,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const distinct = new Set(receiver.since(from).map((arrival) => arrival.deliveryId));
    if (distinct.size >= count) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Late duplicates (a redelivery racing the first attempt) would still show up: give them a beat.
  await new Promise((resolve) => setTimeout(resolve, 1000));
}

function countsOf(arrivals: Arrival[], expectedKeys: Set<string>, keyOf: (a: Arrival) => string) {
  const seen = new Set<string>();
  const deliveryIds = new Set<string>();
  let sentTwice = 0;
  for (const arrival of arrivals) {
    if (deliveryIds.has(arrival.deliveryId)) sentTwice++;
    deliveryIds.add(arrival.deliveryId);
    const key = keyOf(arrival);
    if (expectedKeys.has(key)) seen.add(key);
  }
  return { expected: expectedKeys.size, lost: expectedKeys.size - seen.size, sentTwice };
}

type Api = { url: string; token: string; project: string };

/** Creates one task; resolves with its id and the moment its response arrived. */
async function createTask(api: Api, title: string): Promise<{ id: string; at: number }> {
  const response = await fetch(`${api.url}/api/v1/projects/${api.project}/tasks`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    body: JSON.stringify({ title }),
  });
  const at = performance.now();
  if (!response.ok) throw new Error(`task create: ${response.status}`);
  const body = (await response.json()) as { data: { id: string } };
  return { id: body.data.id, at };
}

/**
 * Writes at a steady rate, then measures commit → arrival for every delivery of every write to
 * the first `hooks` webhooks (the others may be silent), waiting for them up to `deadlineMs`.
 */
async function steadyLatency(
  api: Api,
  receiver: Receiver,
  rate: number,
  seconds: number,
  hooks = WEBHOOKS,
  deadlineMs = ARRIVAL_DEADLINE_MS,
): Promise<Latency> {
  const from = receiver.arrivals.length;
  const writes: Promise<{ id: string; at: number }>[] = [];
  const started = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    writes.push(createTask(api, `Steady ${i}`));
  }
  const written = await Promise.all(writes);
  await awaitArrivals(receiver, from, written.length * hooks, deadlineMs);
  const committedAt = new Map(written.map((write) => [write.id, write.at]));
  const arrivals = receiver.since(from);
  const expected = new Set(
    written.flatMap((write) =>
      Array.from({ length: hooks }, (_, hook) => `${write.id}/hook/${hook}`),
    ),
  );
  const firstArrivals = new Map<string, number>();
  for (const arrival of arrivals) {
    if (!firstArrivals.has(arrival.deliveryId)) firstArrivals.set(arrival.deliveryId, arrival.at);
  }
  const latencies = arrivals
    .filter((arrival) => firstArrivals.get(arrival.deliveryId) === arrival.at)
    .map((arrival) => arrival.at - (committedAt.get(arrival.targetId) ?? arrival.at))
    .sort((a, b) => a - b);
  return {
    ...countsOf(arrivals, expected, (arrival) => `${arrival.targetId}${arrival.hook}`),
    p50: percentile(latencies, 0.5),
    p95: percentile(latencies, 0.95),
    p99: percentile(latencies, 0.99),
  };
}

/** Writes as fast as the API takes them; deliveries/s from the first write to the last arrival. */
async function burst(api: Api, receiver: Receiver) {
  const from = receiver.arrivals.length;
  const started = performance.now();
  const written: { id: string; at: number }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: BURST_CONCURRENCY }, async () => {
      while (next < BURST_WRITES) {
        next++;
        written.push(await createTask(api, `Burst ${next}`));
      }
    }),
  );
  await awaitArrivals(receiver, from, written.length * WEBHOOKS);
  const arrivals = receiver.since(from);
  const expected = new Set(
    written.flatMap((write) =>
      Array.from({ length: WEBHOOKS }, (_, hook) => `${write.id}/hook/${hook}`),
    ),
  );
  const counts = countsOf(arrivals, expected, (arrival) => `${arrival.targetId}${arrival.hook}`);
  const last = Math.max(...arrivals.map((arrival) => arrival.at));
  const delivered = counts.expected - counts.lost;
  return { ...counts, deliveriesPerSecond: (delivered * 1000) / (last - started) };
}

/**
 * 10,000 failed deliveries (1,000 events × 10 webhooks, recorded as failed once), then the daily
 * pass, queued as the worker's cron queues it; timed from the queueing to the last arrival.
 */
async function retryPass(
  databaseUrl: string,
  redisUrl: string,
  prefix: string,
  receiver: Receiver,
) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const queue = new Queue("workspace", { connection: { url: redisUrl }, prefix });
  try {
    const { rows } = await client.query<{ id: string }>(`
      with source as (
        select organization_id, type, action, target_kind, target_id, actor_id, diff
        from change_events where type = 'task.created' limit 1
      ), events as (
        insert into change_events
          (organization_id, type, action, target_kind, target_id, actor_id, diff, fanned_out_at)
        select organization_id, type, action, target_kind, target_id, actor_id, diff, now()
        from source, generate_series(1, ${FAILED_DELIVERIES / WEBHOOKS})
        returning id
      )
      insert into webhook_deliveries (webhook_id, change_event_id, status, attempts, last_attempt_at)
      select w.id, e.id, 'failed', 1, now() from webhooks w, events e
      returning id`);
    const expected = new Set(rows.map((row) => row.id));
    const from = receiver.arrivals.length;
    const started = performance.now();
    await queue.add("runRetryPass", {}, { removeOnComplete: true });
    await awaitArrivals(receiver, from, expected.size);
    const arrivals = receiver.since(from);
    const counts = countsOf(arrivals, expected, (arrival) => arrival.deliveryId);
    const last = Math.max(...arrivals.map((arrival) => arrival.at));
    return { ...counts, seconds: (last - started) / 1000 };
  } finally {
    await queue.close();
    await client.end();
  }
}

/** WEBHOOKS webhooks on the receiver, the last `silent` of them on a path that never answers. */
async function createWebhooks(
  env: NodeJS.ProcessEnv,
  organization: string,
  receiverPort: number,
  silent = 0,
) {
  for (let hook = 0; hook < WEBHOOKS; hook++) {
    const hookPath = hook < WEBHOOKS - silent ? `/hook/${hook}` : `/silent/${hook}`;
    await svc(
      [
        "webhook",
        "create",
        "--org",
        organization,
        "--url",
        `http://127.0.0.1:${receiverPort}${hookPath}`,
        "--events",
        "task.created",
        "--json",
      ],
      env,
    );
  }
}

function baseEnv(port: number): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    RATE_LIMIT_MAX: "1000000000",
    // The bench fails deliveries on purpose; quick retries would only blur the figures.
    WEBHOOK_QUICK_RETRIES: "",
    ...(process.env.WORKER_CONCURRENCY === undefined
      ? {}
      : { WORKER_CONCURRENCY: process.env.WORKER_CONCURRENCY }),
  };
}

type PostgresService = { api: Api; databaseUrl: string; prefix: string; stop(): Promise<void> };

/** The service of `root` on a database of its own, its webhooks on the receiver, ready. */
async function startPostgresService(
  settings: { databaseUrl: string; redisUrl: string },
  receiverPort: number,
  silentWebhooks = 0,
  root = ROOT,
): Promise<PostgresService> {
  const database = await createDatabase(settings.databaseUrl);
  const port = await freePort();
  const prefix = `bench-${randomBytes(4).toString("hex")}`;
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(port),
    SECRET_KEY: randomBytes(32).toString("base64"),
    DATABASE_URL: database.url,
    REDIS_URL: settings.redisUrl,
    QUEUE_PREFIX: prefix,
  };
  let service: Started | undefined;
  const stop = async () => {
    if (service !== undefined) await stopProcess(service);
    await database.drop();
  };
  try {
    await svc(["migrate"], env, root);
    const seeded = JSON.parse(await svc(["demo", "--json"], env, root)) as {
      token: string;
      organizationSlug: string;
    };
    await createWebhooks(env, seeded.organizationSlug, receiverPort, silentWebhooks);
    service = startProcess(
      "npm",
      ["start"],
      {
        ...env,
        // For profiling the service under this load, e.g. SERVICE_NODE_OPTIONS="--require prof.cjs".
        NODE_OPTIONS: process.env.SERVICE_NODE_OPTIONS,
      },
      root,
    );
    const url = `http://127.0.0.1:${port}`;
    await waitForOk(`${url}/readyz`, service);
    const api = { url, token: seeded.token, project: "picker-arm" };
    return { api, databaseUrl: database.url, prefix, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function withPostgresService<T>(
  settings: { databaseUrl: string; redisUrl: string },
  receiverPort: number,
  measure: (api: Api, database: string, prefix: string) => Promise<T>,
  silentWebhooks = 0,
): Promise<T> {
  const service = await startPostgresService(settings, receiverPort, silentWebhooks);
  try {
    return await measure(service.api, service.databaseUrl, service.prefix);
  } finally {
    await service.stop();
  }
}

/**
 * Deliveries/s of the burst for each build (name → checkout), in interleaved rounds on one
 * receiver: each build runs its burst while the others are idle. Answers each build's rounds.
 */
export async function measureBurstOfBuilds(
  settings: { databaseUrl: string; redisUrl: string },
  builds: { name: string; root: string }[],
  rounds: number,
  log: (line: string) => void,
): Promise<Map<string, number[]>> {
  const receiver = new Receiver();
  const receiverPort = await receiver.listen();
  const services: { name: string; service: PostgresService }[] = [];
  try {
    for (const build of builds) {
      const service = await startPostgresService(settings, receiverPort, 0, build.root);
      services.push({ name: build.name, service });
      await steadyLatency(service.api, receiver, STEADY_RATE, 1);
    }
    const measured = new Map<string, number[]>(builds.map((build) => [build.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const { name, service } of rotated(services, round)) {
        const result = await burst(service.api, receiver);
        if (result.lost > 0 || result.sentTwice > 0) {
          throw new Error(`${name}: ${result.lost} lost, ${result.sentTwice} sent twice`);
        }
        measured.get(name)?.push(result.deliveriesPerSecond);
        log(`mechanisms: burst, ${name}: ${Math.round(result.deliveriesPerSecond)} deliveries/s`);
      }
    }
    return measured;
  } finally {
    for (const { service } of services) await service.stop();
    await receiver.close();
  }
}

/** The list started at `round`, so no build always goes first. */
export function rotated<T>(items: T[], round: number): T[] {
  const start = round % items.length;
  return [...items.slice(start), ...items.slice(0, start)];
}

async function embeddedLatency(receiver: Receiver, receiverPort: number): Promise<Latency> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "bench-pipeline-"));
  const port = await freePort();
  const env = { ...baseEnv(port), DATA_DIR: dataDir };
  let service: Started | undefined;
  try {
    const seeded = JSON.parse(await svc(["demo", "--json"], env)) as {
      token: string;
      organizationSlug: string;
    };
    await createWebhooks(env, seeded.organizationSlug, receiverPort);
    service = startProcess("npm", ["start"], env);
    const url = `http://127.0.0.1:${port}`;
    await waitForOk(`${url}/readyz`, service);
    const api = { url, token: seeded.token, project: "picker-arm" };
    await steadyLatency(api, receiver, EMBEDDED_RATE, 1);
    return await steadyLatency(api, receiver, EMBEDDED_RATE, EMBEDDED_SECONDS);
  } finally {
    if (service !== undefined) await stopProcess(service);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function measurePipeline(
  settings: { databaseUrl: string; redisUrl: string },
  log: (line: string) => void,
): Promise<PipelineResults> {
  const receiver = new Receiver();
  const receiverPort = await receiver.listen();
  try {
    const production = await withPostgresService(
      settings,
      receiverPort,
      async (api, url, prefix) => {
        log("pipeline: warming up");
        await steadyLatency(api, receiver, STEADY_RATE, 1);
        log(`pipeline: ${STEADY_RATE} writes/s for ${STEADY_SECONDS} s`);
        const steady = await steadyLatency(api, receiver, STEADY_RATE, STEADY_SECONDS);
        log(
          `pipeline: commit → arrival p50 ${steady.p50.toFixed(1)} ms, p99 ${steady.p99.toFixed(1)} ms`,
        );
        log(`pipeline: burst of ${BURST_WRITES} writes`);
        const burstResult = await burst(api, receiver);
        log(`pipeline: ${Math.round(burstResult.deliveriesPerSecond)} deliveries/s`);
        log(`pipeline: the daily pass re-sending ${FAILED_DELIVERIES} failed deliveries`);
        const pass = await retryPass(url, settings.redisUrl, prefix, receiver);
        log(`pipeline: daily pass ${pass.seconds.toFixed(1)} s`);
        return { steady, burst: burstResult, retryPass: pass };
      },
    );
    log(`pipeline: ${STEADY_RATE} writes/s with 1 of ${WEBHOOKS} webhooks never answering`);
    const oneSilent = await withPostgresService(
      settings,
      receiverPort,
      async (api) => {
        await steadyLatency(api, receiver, STEADY_RATE, 1, WEBHOOKS - 1, SILENT_CASE_DEADLINE_MS);
        return steadyLatency(
          api,
          receiver,
          STEADY_RATE,
          STEADY_SECONDS,
          WEBHOOKS - 1,
          SILENT_CASE_DEADLINE_MS,
        );
      },
      1,
    );
    log(
      `pipeline: the healthy ${WEBHOOKS - 1}: p50 ${oneSilent.p50.toFixed(1)} ms, p99 ${oneSilent.p99.toFixed(1)} ms, ${oneSilent.lost} missing`,
    );
    log("pipeline: embedded mode latency");
    const embedded = await embeddedLatency(receiver, receiverPort);
    return {
      workerConcurrency: process.env.WORKER_CONCURRENCY ?? "default",
      ...production,
      oneSilent,
      embedded,
    };
  } finally {
    await receiver.close();
  }
}
