import type { Redis } from "ioredis";
import type { Config } from "../config.js";
import type { Database } from "../db/client.js";
import { MISSED, withinDeadline } from "../queue/deadline.js";
import type { QueueCounts } from "../queue/queue.js";
import {
  AUTH_FAILURE_KINDS,
  DELIVERY_ATTEMPT_OUTCOMES,
  type MetricsRecorder,
  RATE_LIMIT_KINDS,
  READ_CACHE_OUTCOMES,
} from "./recorder.js";

/** The webhook pipeline as Postgres holds it, read at each scrape by a process that runs the worker. */
export type PipelineState = {
  deliveries: { due: number; held: number; failed: number; exhausted: number };
  /** How long the oldest due delivery has waited; 0 when none is due. */
  oldestDueSeconds: number;
  unrelayedEvents: number;
  /** Age of the oldest change event not yet fanned out; 0 when there is none. */
  oldestUnrelayedSeconds: number;
};

export type MetricsDependencies = {
  settings: NonNullable<Config["metrics"]>;
  database: Database;
  redis: Redis | undefined;
  queue: { counts(): Promise<QueueCounts> };
  /** What the process runs: the API's and the worker's metrics are registered apart. */
  serves: { api: boolean; worker: boolean };
  /** Reads the pipeline's state; given to a process that runs the worker. */
  readPipelineState?: () => Promise<PipelineState>;
};

/** A process's metrics: its recorder, the scrape, and the one call that closes it. */
export type Metrics = {
  recorder: MetricsRecorder;
  contentType: string;
  /** Reads the gauges (each within its deadline) and renders the Prometheus text format. */
  scrape(): Promise<string>;
  close(): void;
};

const ACTIVE_TOTAL_GAUGES = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// 5 ms to 7 days: a delivery that arrives on a quick retry or a daily pass shows too.
const LAG_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200,
  21_600, 43_200, 86_400, 172_800, 345_600, 604_800,
];

/**
 * A reading taken at scrape time, within a deadline. While one is still unanswered (a stalled
 * Postgres or Redis) no other is sent, so scrapes never pile commands up; the scrape reports
 * `undefined` for it instead of waiting.
 */
function boundedReading<T>(
  deadlineMs: number,
  read: () => Promise<T>,
): () => Promise<T | undefined> {
  let unanswered: Promise<unknown> | undefined;
  return async () => {
    if (unanswered !== undefined) return undefined;
    const answer = read();
    const settled = answer.then(
      () => {
        unanswered = undefined;
      },
      () => {
        unanswered = undefined;
      },
    );
    unanswered = settled;
    try {
      const outcome = await withinDeadline(answer, deadlineMs);
      return outcome === MISSED ? undefined : outcome;
    } catch {
      return undefined;
    }
  };
}

/** A gauge's value from a reading: NaN when it could not be read in time. */
const valueOr = (value: number | undefined) => value ?? Number.NaN;

/**
 * Builds the process's own prom-client registry (never the global one) with the metrics of what
 * it serves; prom-client is loaded only here, so a process without METRICS_PORT never loads it.
 */
export async function createMetrics(deps: MetricsDependencies): Promise<Metrics> {
  const client = await import("prom-client");
  const registry = new client.Registry();
  const registers = [registry];
  const deadlineMs = deps.settings.readingTimeoutMs;
  client.collectDefaultMetrics({ register: registry });
  // Gauges named like counters, which `promtool check metrics` flags; nodejs_active_handles and
  // nodejs_active_resources hold the same counts by type.
  for (const name of ACTIVE_TOTAL_GAUGES) registry.removeSingleMetric(name);

  const requestDuration = new client.Histogram({
    name: "http_server_request_duration_seconds",
    help: "Time to answer an HTTP request, by method, route pattern and status code.",
    labelNames: ["method", "route", "status_code"],
    buckets: REQUEST_BUCKETS,
    registers: deps.serves.api ? registers : [],
  });
  const rateLimitRejections = new client.Counter({
    name: "rate_limit_rejections_total",
    help: "Requests refused with 429, by the limit that refused them.",
    labelNames: ["limit"],
    registers: deps.serves.api ? registers : [],
  });
  const idempotencyReplays = new client.Counter({
    name: "idempotency_replays_total",
    help: "POSTs answered with the stored response of an earlier one with the same Idempotency-Key.",
    registers: deps.serves.api ? registers : [],
  });
  const readCacheAnswers = new client.Counter({
    name: "read_cache_answers_total",
    help: "Workspace reads answered from the read cache (hit) or from the database (miss).",
    labelNames: ["outcome"],
    registers: deps.serves.api ? registers : [],
  });
  const authFailures = new client.Counter({
    name: "auth_failures_total",
    help: "Refused authentications, by what was missing or wrong.",
    labelNames: ["kind"],
    registers: deps.serves.api ? registers : [],
  });
  const deliveryAttempts = new client.Counter({
    name: "webhook_delivery_attempts_total",
    help: "Webhook delivery attempts this process made, by outcome.",
    labelNames: ["outcome"],
    registers: deps.serves.worker ? registers : [],
  });
  const deliveryLag = new client.Histogram({
    name: "webhook_delivery_lag_seconds",
    help: "From a change event's commit to the receiver's 2xx, on whichever attempt it arrived.",
    buckets: LAG_BUCKETS,
    registers: deps.serves.worker ? registers : [],
  });
  // Every label value is shown from the start, so rate() sees the first increment of each.
  if (deps.serves.api) {
    for (const limit of RATE_LIMIT_KINDS) rateLimitRejections.inc({ limit }, 0);
    for (const kind of AUTH_FAILURE_KINDS) authFailures.inc({ kind }, 0);
    for (const outcome of READ_CACHE_OUTCOMES) readCacheAnswers.inc({ outcome }, 0);
  }
  if (deps.serves.worker) {
    for (const outcome of DELIVERY_ATTEMPT_OUTCOMES) deliveryAttempts.inc({ outcome }, 0);
  }

  const readings: (() => Promise<void>)[] = [];

  if (deps.database.poolCounts() !== undefined) {
    const total = new client.Gauge({
      name: "postgres_pool_connections",
      help: "Connections the Postgres pool holds open.",
      registers,
    });
    const idle = new client.Gauge({
      name: "postgres_pool_idle_connections",
      help: "Open connections of the Postgres pool that are idle.",
      registers,
    });
    const waiting = new client.Gauge({
      name: "postgres_pool_waiting_queries",
      help: "Queries waiting for a connection of the Postgres pool.",
      registers,
    });
    readings.push(async () => {
      const counts = deps.database.poolCounts();
      total.set(valueOr(counts?.total));
      idle.set(valueOr(counts?.idle));
      waiting.set(valueOr(counts?.waiting));
    });
  }

  const { redis } = deps;
  if (redis !== undefined) {
    const up = new client.Gauge({
      name: "redis_up",
      help: "1 when Redis answered a PING within the deadline at this scrape, else 0.",
      registers,
    });
    const ping = boundedReading(deadlineMs, () => redis.ping());
    readings.push(async () => {
      up.set((await ping()) === undefined ? 0 : 1);
    });
  }

  const { readPipelineState } = deps;
  if (readPipelineState !== undefined) {
    const jobs = new client.Gauge({
      name: "queue_jobs",
      help: "Jobs of the queue by state: waiting, active, delayed.",
      labelNames: ["state"],
      registers,
    });
    const counts = boundedReading(deadlineMs, () => deps.queue.counts());
    readings.push(async () => {
      const read = await counts();
      for (const state of ["waiting", "active", "delayed"] as const) {
        jobs.set({ state }, valueOr(read?.[state]));
      }
    });
    const deliveries = new client.Gauge({
      name: "webhook_deliveries",
      help: "Unsent webhook deliveries by state: due, held (webhook disabled), failed (waiting for a retry), exhausted.",
      labelNames: ["state"],
      registers,
    });
    const backlog = new client.Gauge({
      name: "webhook_delivery_backlog_seconds",
      help: "How long the oldest due webhook delivery has waited.",
      registers,
    });
    const unrelayed = new client.Gauge({
      name: "change_events_unrelayed",
      help: "Change events not yet fanned out into deliveries.",
      registers,
    });
    const unrelayedAge = new client.Gauge({
      name: "change_events_unrelayed_oldest_age_seconds",
      help: "Age of the oldest change event not yet fanned out.",
      registers,
    });
    const pipeline = boundedReading(deadlineMs, readPipelineState);
    readings.push(async () => {
      const state = await pipeline();
      for (const name of ["due", "held", "failed", "exhausted"] as const) {
        deliveries.set({ state: name }, valueOr(state?.deliveries[name]));
      }
      backlog.set(valueOr(state?.oldestDueSeconds));
      unrelayed.set(valueOr(state?.unrelayedEvents));
      unrelayedAge.set(valueOr(state?.oldestUnrelayedSeconds));
    });
  }

  const recorder: MetricsRecorder = {
    enabled: true,
    observeRequest(method, route, statusCode, seconds) {
      requestDuration.observe({ method, route, status_code: statusCode }, seconds);
    },
    countRateLimitRejection: (limit) => rateLimitRejections.inc({ limit }),
    countIdempotencyReplay: () => idempotencyReplays.inc(),
    countReadCacheAnswer: (outcome) => readCacheAnswers.inc({ outcome }),
    countAuthFailure: (kind) => authFailures.inc({ kind }),
    countDeliveryAttempt: (outcome) => deliveryAttempts.inc({ outcome }),
    observeDeliveryLag: (seconds) => deliveryLag.observe(seconds),
  };

  return {
    recorder,
    contentType: registry.contentType,
    async scrape() {
      await Promise.all(readings.map((read) => read()));
      return registry.metrics();
    },
    close: () => registry.clear(),
  };
}
