import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Scope } from "../../src/core/scopes.js";
import { call, type ServiceProcess, startService } from "../faults/service-process.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { ROOT } from "../support/cli.js";
import { type RedisServer, startRedisServer } from "../support/clusters.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import { roverWithWebhook } from "../support/pipeline.js";
import { freePort } from "../support/ports.js";
import { Receiver } from "../support/receiver.js";
import { listeningPorts } from "./listening-ports.js";

// The metrics listener of every process kind, scraped as Prometheus would: `svc serve`,
// `svc worker` and `svc start` with METRICS_PORT, and a `svc serve` without it, on the suite's
// Postgres and a Redis of this file's own (paused to show the deadlines).

const RATE_LIMIT_MAX = 20;

let testDatabase: TestDatabase;
let redis: RedisServer;
let receiver: Receiver;
let token: string;
let readOnlyToken: string;
const metricsPorts = { serve: 0, worker: 0, start: 0 };
let serve: ServiceProcess;
let worker: ServiceProcess;
let start: ServiceProcess;
let bare: ServiceProcess;

beforeAll(async () => {
  [testDatabase, redis, receiver] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    startRedisServer(),
    new Receiver().start(),
  ]);
  const { db } = testDatabase.database;
  const { ws } = await roverWithWebhook(db, TEST_SECRET_KEY, receiver, "acme-observed", "/hook");
  token = await mintToken(db, ws);
  readOnlyToken = await mintToken(db, ws, ["projects:read"] as Scope[]);
  const env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: `metrics-${randomBytes(6).toString("hex")}`,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_QUICK_RETRIES: "",
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    DATABASE_POOL_SIZE: "3",
  };
  for (const kind of ["serve", "worker", "start"] as const) metricsPorts[kind] = await freePort();
  const withMetrics = (kind: keyof typeof metricsPorts) => ({
    ...env,
    METRICS_PORT: String(metricsPorts[kind]),
  });
  [serve, worker, start, bare] = await Promise.all([
    startService("serve", withMetrics("serve")),
    startService("worker", withMetrics("worker")),
    startService("start", withMetrics("start")),
    startService("serve", env),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([serve?.kill(), worker?.kill(), start?.kill(), bare?.kill()]);
  await testDatabase?.drop();
  await receiver?.stop();
  await redis?.kill();
});

const metricsUrl = (kind: keyof typeof metricsPorts, what: string) =>
  `http://127.0.0.1:${metricsPorts[kind]}${what}`;

async function scrape(kind: keyof typeof metricsPorts): Promise<string> {
  const answer = await call(metricsUrl(kind, "/metrics"));
  expect(answer.status).toBe(200);
  expect(answer.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return answer.text;
}

/** The value of one sample (`name{labels}`) in a scrape; undefined when it is not there. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** `promtool check metrics` on a scrape: its complaints, empty when it is clean. */
function promtoolComplaints(text: string): string {
  try {
    execFileSync("promtool", ["check", "metrics"], { input: text, stdio: "pipe" });
    return "";
  } catch (error) {
    const failed = error as { stdout?: Buffer; stderr?: Buffer };
    return `${failed.stdout?.toString() ?? ""}${failed.stderr?.toString() ?? ""}` || "failed";
  }
}

const createTask = (title: string, headers: Record<string, string> = {}) =>
  call(`${serve.url}/api/v1/projects/rover/tasks`, { token, body: { title }, headers });

const attemptsDelivered = async () =>
  (sample(await scrape("worker"), 'webhook_delivery_attempts_total{outcome="delivered"}') ?? 0) +
  (sample(await scrape("start"), 'webhook_delivery_attempts_total{outcome="delivered"}') ?? 0);

describe("the metrics listener of each process kind", () => {
  it("answers /healthz and /readyz on METRICS_PORT, and is not there without it", async () => {
    for (const kind of ["serve", "worker", "start"] as const) {
      expect((await call(metricsUrl(kind, "/healthz"))).status).toBe(200);
      await eventually(async () => (await call(metricsUrl(kind, "/readyz"))).status === 200);
    }
    expect((await call(`${serve.url}/metrics`)).status).toBe(404);
    const apiPort = (service: ServiceProcess) => Number(new URL(service.url).port);
    expect(listeningPorts(serve.child.pid as number)).toEqual(
      [apiPort(serve), metricsPorts.serve].sort((a, b) => a - b),
    );
    expect(listeningPorts(worker.child.pid as number)).toEqual([metricsPorts.worker]);
    expect(listeningPorts(bare.child.pid as number)).toEqual([apiPort(bare)]);
  });

  it("times every answer by route pattern, refusals included, and counts them", async () => {
    const secretPath = `nope-${randomBytes(6).toString("hex")}`;
    expect((await call(`${serve.url}/api/v1/projects/rover`, { token })).status).toBe(200);
    expect((await call(`${serve.url}/api/v1/projects/rover`, { token })).status).toBe(200);
    expect((await call(`${serve.url}/api/v1/projects`)).status).toBe(401);
    expect((await call(`${serve.url}/api/v1/projects`, { token: "svc_live_nope" })).status).toBe(
      401,
    );
    expect((await createTask("first")).status).toBe(200);
    expect(
      (await call(`${serve.url}/api/v1/projects/rover/tasks`, { token: readOnlyToken, body: {} }))
        .status,
    ).toBe(403);
    expect(
      (await call(`${serve.url}/api/v1/projects/rover/tasks`, { token, body: {} })).status,
    ).toBe(400);
    expect((await call(`${serve.url}/api/v1/${secretPath}`, { token })).status).toBe(404);
    const key = { "idempotency-key": `k-${secretPath}` };
    expect((await createTask("once", key)).status).toBe(200);
    expect((await createTask("once", key)).headers.get("idempotent-replayed")).toBe("true");
    let refused = 0;
    for (let i = 0; i <= RATE_LIMIT_MAX && refused === 0; i += 1) {
      const answer = await call(`${serve.url}/api/v1/me`, { token: readOnlyToken });
      if (answer.status === 429) refused += 1;
    }
    expect(refused).toBe(1);
    // A password check (argon2) on a busy machine may take longer than call()'s hang limit.
    const login = await call(`${serve.url}/login`);
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(login.text)?.[1] ?? "";
    const cookie = login.headers
      .getSetCookie()
      .map((header) => header.split(";")[0])
      .join("; ");
    const signIn = await fetch(`${serve.url}/login`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf, email: "nobody@x.example", password: "wrong" }),
      redirect: "manual",
    });
    expect(signIn.status).toBe(401);

    const text = await scrape("serve");
    const count = (route: string, method: string, status: number) =>
      sample(
        text,
        `http_server_request_duration_seconds_count{method="${method}",route="${route}",status_code="${status}"}`,
      );
    expect(count("/api/v1/projects/:slug", "GET", 200)).toBe(2);
    expect(count("/api/v1/projects", "GET", 401)).toBe(2);
    expect(count("/api/v1/projects/:slug/tasks", "POST", 400)).toBe(1);
    expect(count("/api/v1/projects/:slug/tasks", "POST", 403)).toBe(1);
    expect(count("/api/v1/me", "GET", 429)).toBe(1);
    // The other is /metrics asked of the API's port, in the test above.
    expect(count("unmatched", "GET", 404)).toBe(2);
    expect(sample(text, 'auth_failures_total{kind="missing_token"}')).toBe(1);
    expect(sample(text, 'auth_failures_total{kind="invalid_token"}')).toBe(1);
    expect(sample(text, 'auth_failures_total{kind="insufficient_scope"}')).toBe(1);
    expect(sample(text, 'auth_failures_total{kind="sign_in"}')).toBe(1);
    expect(sample(text, 'rate_limit_rejections_total{limit="api"}')).toBe(1);
    expect(sample(text, "idempotency_replays_total")).toBe(1);
    expect(sample(text, 'read_cache_answers_total{outcome="miss"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'read_cache_answers_total{outcome="hit"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, "postgres_pool_connections")).toBeGreaterThan(0);
    expect(sample(text, "redis_up")).toBe(1);
    expect(sample(text, "nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    // Labels hold patterns and closed sets only: no raw URL, token or organisation.
    expect(text).not.toContain(secretPath);
    expect(text).not.toContain(token);
    expect(text).not.toContain("acme-observed");
    // The API's metrics are the API's: the worker's pipeline gauges are the worker's.
    expect(text).not.toContain("webhook_delivery_attempts_total");
    expect(promtoolComplaints(text)).toBe("");
  });

  it("counts the worker's delivery attempts and their lag, and reads the pipeline", async () => {
    await eventually(async () => (await attemptsDelivered()) >= 2);
    const texts = [await scrape("worker"), await scrape("start")];
    const lagCount = texts
      .map((text) => sample(text, "webhook_delivery_lag_seconds_count") ?? 0)
      .reduce((a, b) => a + b, 0);
    expect(lagCount).toBeGreaterThanOrEqual(2);
    for (const text of texts) {
      expect(sample(text, 'webhook_deliveries{state="exhausted"}')).toBe(0);
      expect(sample(text, "change_events_unrelayed")).toBeGreaterThanOrEqual(0);
      expect(sample(text, "webhook_delivery_backlog_seconds")).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'queue_jobs{state="waiting"}')).toBeGreaterThanOrEqual(0);
      expect(promtoolComplaints(text)).toBe("");
    }
    expect(texts[0]).not.toContain("http_server_request_duration_seconds");
    expect(texts[1]).toContain("http_server_request_duration_seconds");
  });

  it("serves every metric the shipped alert rules read", async () => {
    const scrapes = [await scrape("serve"), await scrape("worker"), await scrape("start")];
    const served = new Set(
      Array.from(scrapes.join("\n").matchAll(/^# TYPE (\S+) /gm), (match) => match[1]),
    );
    const rules = readFileSync(path.join(ROOT, "deploy/prometheus/alerts.yml"), "utf8");
    const read = new Set(
      Array.from(
        rules.matchAll(/\b(?:http|webhook|change|postgres|redis|queue)_[a-z0-9_]+/g),
        ([name]) => name.replace(/_(bucket|count|sum)$/, ""),
      ),
    );
    expect(read.size).toBeGreaterThanOrEqual(6);
    expect([...read].filter((name) => !served.has(name))).toEqual([]);
  });
});

describe("a real Prometheus scraping the API and the workers", () => {
  let prometheus: ChildProcess | undefined;
  let dir: string;
  let prometheusUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "prometheus-"));
    const targets = Object.values(metricsPorts).map((port) => `"127.0.0.1:${port}"`);
    writeFileSync(
      path.join(dir, "prometheus.yml"),
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: workspace\n    static_configs:\n      - targets: [${targets.join(", ")}]\n`,
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      "/usr/bin/prometheus",
      [
        `--config.file=${path.join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${path.join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: "ignore" },
    );
  });
  afterAll(() => {
    prometheus?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  const attemptsSeen = async (): Promise<number | undefined> => {
    const query = encodeURIComponent("sum(webhook_delivery_attempts_total)");
    const answer = await fetch(`${prometheusUrl}/api/v1/query?query=${query}`).catch(() => null);
    if (answer === null || !answer.ok) return undefined;
    const body = (await answer.json()) as { data: { result: { value: [number, string] }[] } };
    const value = body.data.result[0]?.value[1];
    return value === undefined ? undefined : Number(value);
  };

  it("sees webhook_delivery_attempts_total grow after writes", async () => {
    const before = await eventually(async () => {
      const seen = await attemptsSeen();
      return seen === undefined || seen < 2 ? undefined : { seen };
    }, 45_000);
    expect((await createTask("seen by Prometheus")).status).toBe(200);
    await eventually(async () => ((await attemptsSeen()) ?? 0) > before.seen, 45_000);
  }, 60_000);
});

describe("the worker's readiness", () => {
  beforeAll(async () => {
    // From here on the worker alone delivers.
    await start.kill();
  });

  it("is 503 while Redis does not answer, and the scrape still answers", async () => {
    redis.pause();
    try {
      const readyz = await call(metricsUrl("worker", "/readyz"));
      expect(readyz.status).toBe(503);
      expect(readyz.json().checks).toMatchObject({ database: "ok", redis: "unavailable" });
      const text = await scrape("worker");
      expect(sample(text, "redis_up")).toBe(0);
      expect(sample(text, 'queue_jobs{state="waiting"}')).toBeNaN();
    } finally {
      redis.resume();
    }
    await eventually(async () => (await call(metricsUrl("worker", "/readyz"))).status === 200);
  });

  it("is 503 while it drains on SIGTERM", async () => {
    receiver.respond("/hook", { delayMs: 3000 });
    const title = "in flight at SIGTERM";
    expect((await createTask(title)).status).toBe(200);
    await eventually(() =>
      receiver.on("/hook").some((request) => request.rawBody.toString().includes(title)),
    );
    worker.child.kill("SIGTERM");
    // The signal is handled a moment later; the attempt in flight holds the drain for 3 s.
    const readyz = await eventually(async () => {
      const answer = await call(metricsUrl("worker", "/readyz"));
      return answer.status === 503 ? answer : undefined;
    });
    expect(readyz.json()).toMatchObject({ status: "draining" });
    expect((await worker.exited).code).toBe(0);
  });
});
