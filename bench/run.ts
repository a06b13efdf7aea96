/**
 * `npm run bench`: what a user feels, side by side with the stack's own limit, in one run. It
 * builds the service, measures the API in production mode against its bare twin, the scaling
 * checks, and the embedded default's start and memory; prints each figure with its target as a
 * markdown table (bench/RESULTS.md keeps the committed ones) and exits 1 when a target is missed.
 * Needs the PostgreSQL and Redis the tests use (TEST_DATABASE_URL, TEST_REDIS_URL).
 *
 * `npm run bench -- pipeline` (or api, scaling, embedded, mechanisms, in any combination) runs
 * only those parts. `mechanisms` measures each speed mechanism on and off (bench/mechanisms.ts).
 * `retention` and `backlog` (bench/retention.ts, bench/backlog.ts) seed a million rows each and
 * run only when named.
 * `BENCH_METRICS=1 npm run bench` runs the service of the api and embedded parts with its metrics
 * listener on (METRICS_PORT), scraped every 15 s as Prometheus would (bench/metrics-scrape.ts).
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import { measureApi } from "./api.js";
import { measureBacklog } from "./backlog.js";
import { measureEmbedded } from "./embedded.js";
import { comparisonTable, measureMechanisms } from "./mechanisms.js";
import { measurePipeline, type PipelineResults } from "./pipeline.js";
import { ROOT } from "./processes.js";
import { measureRetention } from "./retention.js";
import { measureScaling } from "./scaling.js";

const DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

const began = performance.now();
const log = (line: string) => {
  const seconds = ((performance.now() - began) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[${seconds} s] ${line}\n`);
};

type Check = { name: string; value: string; target: string; ok: boolean };
const checks: Check[] = [];
const check = (name: string, value: string, target: string, ok: boolean) =>
  checks.push({ name, value, target, ok });
const fixed = (value: number, digits = 0) => value.toFixed(digits);

const PARTS = [
  "api",
  "scaling",
  "embedded",
  "pipeline",
  "mechanisms",
  "retention",
  "backlog",
] as const;
// Minutes of seeding a million rows each: run only when asked for by name.
const ON_REQUEST: readonly string[] = ["retention", "backlog"];
const asked = process.argv.slice(2);
const unknown = asked.filter((part) => !(PARTS as readonly string[]).includes(part));
if (unknown.length > 0)
  throw new Error(`unknown bench part ${unknown.join(", ")}: use ${PARTS.join(", ")}`);
const runs = (part: (typeof PARTS)[number]) =>
  asked.includes(part) || (asked.length === 0 && !ON_REQUEST.includes(part));
const settings = { databaseUrl: DATABASE_URL, redisUrl: REDIS_URL };

log("building (npm run build), so npm start runs this checkout");
execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });

async function apiPart(): Promise<string[]> {
  log("api: production mode against the stack's limit (bench/twin.ts)");
  const api = await measureApi(settings, log);
  const apiRows = api.endpoints.map((endpoint) => {
    const ratio = endpoint.service.requestsPerSecond / endpoint.twin.requestsPerSecond;
    // A read against stored answers from one indexed lookup; the write against its own INSERTs.
    const minimum = endpoint.write ? 0.8 : 0.85;
    check(
      `${endpoint.name}: req/s ratio to the twin`,
      fixed(ratio, 2),
      `>= ${minimum}`,
      ratio >= minimum,
    );
    if (!endpoint.write) {
      const p99 = endpoint.service.p99 / endpoint.twin.p99;
      check(`${endpoint.name}: p99 over the twin's`, fixed(p99, 2), "<= 1.5", p99 <= 1.5);
    }
    return `| \`${endpoint.name}\` | ${fixed(endpoint.service.requestsPerSecond)} | ${fixed(endpoint.twin.requestsPerSecond)} | ${fixed(ratio, 2)} | ${endpoint.service.p50} | ${endpoint.twin.p50} | ${endpoint.service.p99} | ${endpoint.twin.p99} | ${fixed(endpoint.peakRssMiB)} |`;
  });
  check(
    "peak RSS of the npm start tree under load, production",
    `${fixed(api.peakRssMiB)} MiB`,
    "< 250 MiB",
    api.peakRssMiB < 250,
  );
  return apiRows;
}

async function scalingPart() {
  log("scaling checks, in process");
  for (const target of await measureScaling()) {
    const unit = target.unit === "x" ? "x" : ` ${target.unit}`;
    check(
      target.name,
      `${fixed(target.measured, 2)}${unit}`,
      `<= ${target.limit}${unit}`,
      target.measured <= target.limit,
    );
  }
}

async function embeddedPart() {
  log("embedded: cold start, restart and memory");
  const embedded = await measureEmbedded(log);
  check(
    "embedded cold start (fresh DATA_DIR to the first /healthz 200)",
    `${fixed(embedded.coldStartMs)} ms`,
    "< 3000 ms",
    embedded.coldStartMs < 3000,
  );
  check(
    "embedded restart",
    `${fixed(embedded.restartMs)} ms`,
    "< 2000 ms",
    embedded.restartMs < 2000,
  );
  check(
    "peak RSS of the npm start tree under load, embedded",
    `${fixed(embedded.peakRssMiB)} MiB`,
    "< 400 MiB",
    embedded.peakRssMiB < 400,
  );
}

/** Commit → arrival and throughput of the webhook pipeline (its targets). */
async function pipelinePart(): Promise<PipelineResults> {
  log("pipeline: webhooks on a local receiver");
  const pipeline = await measurePipeline(settings, log);
  const latency = (mode: string, measured: PipelineResults["steady"], p99Limit: number) => {
    check(
      `${mode}: commit → arrival p50`,
      `${fixed(measured.p50, 1)} ms`,
      "< 25 ms",
      measured.p50 < 25,
    );
    check(
      `${mode}: commit → arrival p95`,
      `${fixed(measured.p95, 1)} ms`,
      "< 80 ms",
      measured.p95 < 80,
    );
    check(
      `${mode}: commit → arrival p99`,
      `${fixed(measured.p99, 1)} ms`,
      `<= ${p99Limit} ms`,
      measured.p99 <= p99Limit,
    );
  };
  const nothingLost = (
    phase: string,
    counts: { expected: number; lost: number; sentTwice: number },
  ) => {
    check(
      `${phase}: deliveries lost of ${counts.expected}`,
      String(counts.lost),
      "0",
      counts.lost === 0,
    );
    check(`${phase}: deliveries sent twice`, String(counts.sentTwice), "0", counts.sentTwice === 0);
  };
  latency(`pipeline, ${STEADY_LABEL}`, pipeline.steady, 60);
  nothingLost(`pipeline, ${STEADY_LABEL}`, pipeline.steady);
  // Issue 23: one receiver that never answers leaves the others' latency alone.
  const silent = "pipeline, 1 of 10 webhooks never answers, the healthy 9";
  check(`${silent}: p50`, `${fixed(pipeline.oneSilent.p50, 1)} ms`, "—", true);
  check(
    `${silent}: p99`,
    `${fixed(pipeline.oneSilent.p99, 1)} ms`,
    `<= 2 × all healthy (${fixed(pipeline.steady.p99 * 2, 1)} ms)`,
    pipeline.oneSilent.p99 <= pipeline.steady.p99 * 2,
  );
  nothingLost(silent, pipeline.oneSilent);
  check(
    "pipeline, burst of 300 writes × 10 webhooks: deliveries/s",
    fixed(pipeline.burst.deliveriesPerSecond),
    ">= 2500",
    pipeline.burst.deliveriesPerSecond >= 2500,
  );
  nothingLost("pipeline, burst", pipeline.burst);
  check(
    "pipeline, daily pass re-sending 10,000 failed deliveries",
    `${fixed(pipeline.retryPass.seconds, 1)} s`,
    "< 30 s",
    pipeline.retryPass.seconds < 30,
  );
  nothingLost("pipeline, daily pass", pipeline.retryPass);
  latency("pipeline, embedded, 20 writes/s", pipeline.embedded, 150);
  nothingLost("pipeline, embedded", pipeline.embedded);
  return pipeline;
}

/** The delivery log's retention on a million settled deliveries, under 50 writes/s. */
async function retentionPart() {
  log("retention: a million settled deliveries, purged under 50 writes/s");
  const r = await measureRetention(settings, log);
  const label = `retention of ${r.settled.toLocaleString("en")} settled deliveries`;
  check(`${label}: seeding (set-based SQL)`, `${fixed(r.seedSeconds)} s`, "—", true);
  check(`${label}: purge time (svc retention run)`, `${fixed(r.purgeSeconds, 1)} s`, "—", true);
  check(
    `${label}: removed`,
    `${r.removed.deliveries} deliveries, ${r.removed.attempts} attempts, ${r.removed.events} events`,
    `${r.settled} deliveries`,
    r.removed.deliveries === r.settled && r.expiredLeft === 0,
  );
  const writes = (l: RetentionLatency) =>
    `${fixed(l.p99)} ms (p50 ${fixed(l.p50)}, ${l.count} writes, ${l.failed} failed)`;
  check(`${label}: write p99 before`, writes(r.before), "—", r.before.failed === 0);
  check(
    `${label}: write p99 during`,
    writes(r.during),
    `<= 2 × before (${fixed(r.before.p99 * 2)} ms)`,
    r.during.p99 <= r.before.p99 * 2 && r.during.failed === 0,
  );
  for (const kind of r.mustStay) {
    check(
      `${label}: must stay, ${kind.kind}`,
      `${kind.left} of ${kind.seeded}`,
      `${kind.seeded}`,
      kind.left === kind.seeded,
    );
  }
}
type RetentionLatency = { p50: number; p99: number; count: number; failed: number };

/** A receiver down for a day and a million deliveries due: what Redis, the worker and the API feel. */
async function backlogPart() {
  log("backlog: one receiver down, a million failed deliveries, the daily pass");
  const r = await measureBacklog(settings, log);
  const label = `backlog of ${r.backlog.toLocaleString("en")}`;
  const redisGrowth = r.peakRedisMiB - r.idleRedisMiB;
  check(
    `${label}: Redis used_memory over idle (${fixed(r.idleRedisMiB)} MiB; shared Redis)`,
    `+${fixed(redisGrowth, 1)} MiB`,
    "<= 100 MiB",
    redisGrowth <= 100,
  );
  check(
    `${label}: jobs waiting in the queue at most`,
    String(r.peakQueueWaiting),
    `<= WEBHOOK_QUEUE_WINDOW (${r.queueWindow})`,
    r.peakQueueWaiting <= r.queueWindow,
  );
  check(
    `${label}: worker RSS peak`,
    `${fixed(r.peakWorkerRssMiB)} MiB`,
    "< 300 MiB",
    r.peakWorkerRssMiB < 300,
  );
  check(
    `${label}: deliveries the pass made due before the receiver came back`,
    String(r.claimedByPass),
    "—",
    true,
  );
  check(
    `${label}: API write p99 without the backlog`,
    `${fixed(r.idle.p99)} ms (p50 ${fixed(r.idle.p50)})`,
    "—",
    r.idle.failed === 0,
  );
  check(
    `${label}: API write p99 with the backlog`,
    `${fixed(r.withBacklog.p99)} ms (p50 ${fixed(r.withBacklog.p50)})`,
    `<= 2 × without (${fixed(r.idle.p99 * 2)} ms)`,
    r.withBacklog.p99 <= r.idle.p99 * 2 && r.withBacklog.failed === 0,
  );
  check(
    `${label}: drain after the receiver's return`,
    `${fixed(r.drain.perSecond)} deliveries/s (${r.drain.deliveries} in the window, first after ${fixed(r.drain.firstArrivalSeconds, 1)} s)`,
    "—",
    r.drain.deliveries > 0,
  );
  check(
    `${label}: arrivals older than one already arrived (event order)`,
    `${r.drain.outOfOrder}, by up to ${r.drain.maxDisplacement} events`,
    "— (reported)",
    true,
  );
}

const STEADY_LABEL = "production, 50 writes/s";
const apiRows = runs("api") ? await apiPart() : [];
if (runs("scaling")) await scalingPart();
if (runs("embedded")) await embeddedPart();
const pipeline = runs("pipeline") ? await pipelinePart() : undefined;
const mechanisms = runs("mechanisms") ? await measureMechanisms(settings, log) : [];
if (runs("retention")) await retentionPart();
if (runs("backlog")) await backlogPart();

const cpu = os.cpus()[0]?.model ?? "unknown CPU";
console.log(
  `\nMachine: ${os.cpus().length} × ${cpu}, ${fixed(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}\n`,
);
if (apiRows.length > 0) {
  console.log(
    "| endpoint | service req/s | twin req/s | ratio | service p50 ms | twin p50 ms | service p99 ms | twin p99 ms | peak RSS MiB |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const row of apiRows) console.log(row);
}
if (pipeline !== undefined) {
  console.log(`\nPipeline with WORKER_CONCURRENCY=${pipeline.workerConcurrency}.`);
}
if (mechanisms.length > 0) {
  const load = os.loadavg().map((value) => value.toFixed(1));
  console.log(`\nEach mechanism on and off (load average at the end: ${load.join(", ")}).\n`);
  for (const row of comparisonTable(mechanisms)) console.log(row);
}
console.log("\n| check | measured | target | |\n| --- | --- | --- | --- |");
for (const c of checks)
  console.log(`| ${c.name} | ${c.value} | ${c.target} | ${c.ok ? "ok" : "MISSED"} |`);
const missed = checks.filter((c) => !c.ok).length;
log(`done: ${checks.length - missed} of ${checks.length} targets met`);
process.exitCode = missed === 0 ? 0 : 1;
