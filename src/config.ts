import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CronExpressionParser } from "cron-parser";
import ipaddr from "ipaddr.js";
import { z } from "zod";

const booleanFlag = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const positiveInt = z.coerce.number().int().positive();

const environmentSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  DATABASE_LISTEN_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional(),
  REDIS_COMMAND_TIMEOUT_MS: positiveInt.default(50),
  QUEUE_COMMAND_TIMEOUT_MS: positiveInt.default(500),
  READINESS_TIMEOUT_MS: positiveInt.default(500),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  METRICS_READING_TIMEOUT_MS: positiveInt.default(1000),
  DATA_DIR: z.string().min(1).default("./data"),
  SECRET_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  OAUTH_CODE_TTL_SECONDS: positiveInt.default(600),
  CORS_KNOWN_ORIGIN_MAX_AGE_MS: positiveInt.default(60_000),
  CORS_UNKNOWN_ORIGIN_MAX_AGE_MS: positiveInt.default(1000),
  CORS_ORIGIN_CACHE_SIZE: positiveInt.default(1000),
  RATE_LIMIT_MAX: positiveInt.default(600),
  RATE_LIMIT_WINDOW_SECONDS: positiveInt.default(60),
  AUTH_RATE_LIMIT_MAX: positiveInt.default(10),
  PAGE_RATE_LIMIT_MAX: positiveInt.default(300),
  SIGN_IN_ACCOUNT_CONCURRENCY: positiveInt.default(2),
  SIGN_IN_ACCOUNT_PER_MINUTE: positiveInt.default(10),
  BODY_LIMIT_BYTES: positiveInt.default(1048576),
  MIGRATE_ON_START: booleanFlag.default(true),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, "letters, digits, - and _ only")
    .default("svc"),
  WORKER_CONCURRENCY: positiveInt.default(50),
  WORKER_LOCK_SECONDS: positiveInt.default(30),
  WEBHOOK_RETRY_CRON: z
    .string()
    .min(1)
    .default("0 3 * * *")
    .superRefine((value, context) => checkCronPattern(value, context)),
  WEBHOOK_RETRY_PASSES: positiveInt.default(7),
  WEBHOOK_QUICK_RETRIES: z
    .string()
    .default("1m,10m,1h")
    .transform((value, context) => parseDurationList(value, context)),
  WEBHOOK_AUTO_DISABLE_DAYS: positiveInt.default(5),
  WEBHOOK_RELAY_INTERVAL_MS: positiveInt.default(1000),
  WEBHOOK_MAX_PER_ORGANIZATION: positiveInt.default(20),
  WEBHOOK_RELAY_BATCH_SIZE: positiveInt.default(200),
  WEBHOOK_RECOVERY_INTERVAL_MS: positiveInt.default(60_000),
  WEBHOOK_OVERDUE_AFTER_MS: positiveInt.optional(),
  WEBHOOK_RECOVERY_BATCH_SIZE: positiveInt.default(500),
  WEBHOOK_RETRY_PASS_BATCH_SIZE: positiveInt.default(500),
  WEBHOOK_QUEUE_WINDOW: positiveInt.default(10_000),
  WEBHOOK_QUEUE_WINDOW_WAIT_MS: positiveInt.default(1000),
  WEBHOOK_DELIVERY_TIMEOUT_MS: positiveInt.default(10_000),
  WEBHOOK_MAX_IN_FLIGHT: positiveInt.default(10),
  WEBHOOK_MAX_IN_FLIGHT_PER_ORGANIZATION: positiveInt.default(40),
  WEBHOOK_MAX_PENDING: positiveInt.default(10_000),
  WEBHOOK_MAX_PENDING_PER_WEBHOOK: positiveInt.default(1000),
  WEBHOOK_BREAKER_WINDOW_SECONDS: positiveInt.default(60),
  WEBHOOK_BREAKER_COOLDOWN_SECONDS: positiveInt.default(30),
  WEBHOOK_BREAKER_MAX_COOLDOWN_SECONDS: positiveInt.default(3600),
  WEBHOOK_ALLOWED_PRIVATE_RANGES: z
    .string()
    .default("")
    .transform((value, context) => parseCidrList(value, context)),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt.default(30_000),
  HTTP_CONNECTION_TIMEOUT_MS: positiveInt.default(60_000),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt.default(1000),
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt.default(10_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: positiveInt.default(10_000),
  DATABASE_PREPARED_STATEMENTS: booleanFlag.default(true),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(20_000),
  SHUTDOWN_DRAIN_DELAY_MS: z.coerce.number().int().nonnegative().default(0),
  SESSION_IDLE_TIMEOUT_MINUTES: positiveInt.default(30),
  MARKDOWN_THREADS: positiveInt.default(1),
  MARKDOWN_TIMEOUT_MS: positiveInt.default(2000),
  RICH_TEXT_MAX_BYTES: positiveInt.default(1_048_576),
  PAGE_REVISIONS_KEPT: positiveInt.default(20),
  READ_CACHE_MAX_CHARACTERS: z.coerce.number().int().nonnegative().default(16_777_216),
  READ_CACHE_MAX_AGE_MS: positiveInt.default(60_000),
  AUDIT_LOG_RETENTION_DAYS: positiveInt.default(365),
  AUDIT_LOG_PRUNE_BATCH_SIZE: positiveInt.default(1000),
  DELIVERY_LOG_RETENTION_DAYS: positiveInt.default(30),
  RETENTION_BATCH_SIZE: positiveInt.default(5000),
  RETENTION_INTERVAL_MS: positiveInt.default(3_600_000),
  TRUST_PROXY: z
    .string()
    .default("false")
    .transform((value, context) => parseTrustProxy(value, context)),
  // OpenTelemetry's standard variables: traces are exported only when an endpoint is set.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .default("")
    .transform((value, context) => parseOtlpHeaders(value, context)),
  OTEL_EXPORTER_OTLP_TIMEOUT: positiveInt.default(10_000),
  OTEL_SERVICE_NAME: z.string().min(1).default("workspace-service"),
  OTEL_BSP_SCHEDULE_DELAY: positiveInt.default(5000),
  OTEL_BSP_EXPORT_TIMEOUT: positiveInt.default(30_000),
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInt.default(2048),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInt.default(512),
});

/** `api-key=secret,x-team=a%20b`: the OTLP exporter's headers, values percent-encoded. */
function parseOtlpHeaders(value: string, context: z.RefinementCtx): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of value.split(",")) {
    if (entry.trim() === "") continue;
    const separator = entry.indexOf("=");
    const name = entry.slice(0, separator).trim();
    const headerValue = separator > 0 ? decodedOrNull(entry.slice(separator + 1).trim()) : null;
    if (name === "" || headerValue === null) {
      context.addIssue({
        code: "custom",
        message: "must be name=value pairs, comma-separated, values percent-encoded",
      });
      return {};
    }
    headers[name] = headerValue;
  }
  return headers;
}

function decodedOrNull(value: string): string | null {
  try {
    return decodeURIComponent(value);
  } catch {
    return null;
  }
}

/**
 * Which proxies may say who the client is (X-Forwarded-For, X-Forwarded-Proto): their addresses
 * and CIDRs. Trusting every hop would let any client pick its own address and so its own
 * per-address sign-in budget; Fastify trusts nothing for a bare hop count, so neither is accepted.
 */
function parseTrustProxy(value: string, context: z.RefinementCtx): false | string {
  const trimmed = value.trim();
  if (trimmed === "false") return false;
  if (trimmed === "true" || /^\d+$/.test(trimmed)) {
    context.addIssue({
      code: "custom",
      message: "must be false or the proxies' addresses and CIDRs (comma-separated)",
    });
    return false;
  }
  return trimmed;
}

/** Comma-separated CIDRs (`10.20.0.0/16,fd00:1::/64`); empty means none. */
function parseCidrList(value: string, context: z.RefinementCtx): string[] {
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const invalid = entries.filter((entry) => !ipaddr.isValidCIDR(entry));
  if (invalid.length > 0) {
    context.addIssue({ code: "custom", message: `not a CIDR: ${invalid.join(", ")}` });
  }
  return entries;
}

/** Refused at start, not found out by the worker when it first schedules the pass. */
function checkCronPattern(value: string, context: z.RefinementCtx): void {
  try {
    CronExpressionParser.parse(value);
  } catch (error) {
    context.addIssue({
      code: "custom",
      message: `not a cron pattern (${error instanceof Error ? error.message : String(error)})`,
    });
  }
}

/**
 * An empty variable counts as unset, except where empty is itself a setting: an empty
 * WEBHOOK_QUICK_RETRIES turns the quick retries off.
 */
const EMPTY_IS_A_VALUE = new Set(["WEBHOOK_QUICK_RETRIES"]);

const DURATION = /^(\d+)([smhd]?)$/;
const SECONDS_PER_UNIT: Record<string, number> = { "": 1, s: 1, m: 60, h: 3600, d: 86400 };

/** `0s`, `90`, `90s`, `15m`, `12h` or `30d` → seconds; null when it is none of those. */
export function parseSeconds(input: string): number | null {
  const match = DURATION.exec(input.trim());
  if (match === null) return null;
  const seconds = Number(match[1]) * (SECONDS_PER_UNIT[match[2] ?? ""] ?? 1);
  return Number.isSafeInteger(seconds) ? seconds : null;
}

/** A duration longer than zero, in seconds; null when it is not one. */
export function parseDuration(input: string): number | null {
  const seconds = parseSeconds(input);
  return seconds !== null && seconds > 0 ? seconds : null;
}

/** A comma-separated list of durations; empty means none. */
function parseDurationList(value: string, context: z.RefinementCtx): number[] {
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const seconds = entries.map(parseDuration);
  if (seconds.some((entry) => entry === null)) {
    context.addIssue({ code: "custom", message: "must be durations like 1m,10m,1h (or empty)" });
    return [];
  }
  return seconds as number[];
}

export class ConfigError extends Error {}

/** An issue of one variable names it; an issue of the whole environment says it all itself. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) =>
      issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`,
    )
    .join("; ");
}

/**
 * Outside production the service keeps its own secret beside the data so that encrypted webhook secrets and
 * session cookies survive restarts without the user configuring anything.
 */
function localSecretKey(dataDir: string): string {
  const file = path.join(dataDir, "secret.key");
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readFileSync(file, "utf8").trim();
}

/**
 * Scheme and host lower-cased, default port dropped, no trailing slash: every check that reads
 * `https:` (Secure cookies, HSTS) and the OAuth issuer see one spelling.
 */
function normalisePublicUrl(value: string): string {
  const url = new URL(value);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

type Environment = z.output<typeof environmentSchema>;

/** Bounds on every PostgreSQL connection of the process (not the embedded PGlite). */
function postgresLimitsOf(e: Environment) {
  return {
    poolSize: e.DATABASE_POOL_SIZE,
    /** Bounds both opening a connection and waiting for a free one of the pool. */
    connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    idleInTransactionTimeoutMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    /**
     * Named prepared statements; off behind a pooler that cannot carry them from one
     * transaction to the next (PgBouncer before 1.21 in transaction mode).
     */
    preparedStatements: e.DATABASE_PREPARED_STATEMENTS,
  };
}

/**
 * Where and how traces are exported, or undefined when no OTLP endpoint is set: tracing is off and
 * none of OpenTelemetry is loaded. The signal's own endpoint is used as it is, the general one
 * gets `/v1/traces` (the OTLP exporter specification).
 */
function tracingOf(e: Environment) {
  const general = e.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, "");
  const tracesUrl =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (general === undefined ? undefined : `${general}/v1/traces`);
  if (tracesUrl === undefined) return undefined;
  return {
    tracesUrl,
    headers: e.OTEL_EXPORTER_OTLP_HEADERS,
    serviceName: e.OTEL_SERVICE_NAME,
    /** Spans wait this long in memory before they are sent together. */
    scheduleDelayMs: e.OTEL_BSP_SCHEDULE_DELAY,
    /** One export request, its retries included, may take this long. */
    requestTimeoutMs: e.OTEL_EXPORTER_OTLP_TIMEOUT,
    /** One export of a batch may take this long before it is given up. */
    exportTimeoutMs: e.OTEL_BSP_EXPORT_TIMEOUT,
    /** Spans waiting beyond this are dropped, so a collector that is away costs bounded memory. */
    maxQueueSize: e.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
  };
}

/** The environment's variables, checked, then shaped into what the service reads. */
const configSchema = environmentSchema.transform((e, context) => {
  const isProduction = e.NODE_ENV === "production";
  if (isProduction && e.SECRET_KEY === undefined) {
    context.addIssue({ code: "custom", message: "SECRET_KEY is required in production" });
    return z.NEVER;
  }
  if (e.DATABASE_LISTEN_URL !== undefined && e.DATABASE_URL === undefined) {
    context.addIssue({
      code: "custom",
      path: ["DATABASE_LISTEN_URL"],
      message: "needs DATABASE_URL (the embedded database has no sessions to set apart)",
    });
    return z.NEVER;
  }
  // A lock that ends during an attempt lets another worker take the job and send it again.
  if (e.WORKER_LOCK_SECONDS * 1000 <= e.WEBHOOK_DELIVERY_TIMEOUT_MS) {
    context.addIssue({
      code: "custom",
      path: ["WORKER_LOCK_SECONDS"],
      message: "must outlast one delivery attempt (WEBHOOK_DELIVERY_TIMEOUT_MS)",
    });
    return z.NEVER;
  }
  if (e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > e.OTEL_BSP_MAX_QUEUE_SIZE) {
    context.addIssue({
      code: "custom",
      path: ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"],
      message: "must not exceed OTEL_BSP_MAX_QUEUE_SIZE",
    });
    return z.NEVER;
  }
  // The spans still waiting are sent on SIGTERM: a collector away must not outlast the shutdown.
  const tracingOn =
    e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
  if (tracingOn && e.OTEL_EXPORTER_OTLP_TIMEOUT >= e.SHUTDOWN_TIMEOUT_MS) {
    context.addIssue({
      code: "custom",
      path: ["OTEL_EXPORTER_OTLP_TIMEOUT"],
      message: "must be shorter than SHUTDOWN_TIMEOUT_MS",
    });
    return z.NEVER;
  }
  const dataDir = path.resolve(e.DATA_DIR);
  const publicHost = e.HOST === "0.0.0.0" || e.HOST === "::" ? "localhost" : e.HOST;
  const publicUrl = normalisePublicUrl(e.PUBLIC_URL ?? `http://${publicHost}:${e.PORT}`);
  return {
    isProduction,
    port: e.PORT,
    host: e.HOST,
    /** Service root, without a trailing slash; the API base is `${publicUrl}/api/v1`. */
    publicUrl,
    databaseUrl: e.DATABASE_URL,
    /**
     * A direct session for what a transaction-mode pooler would break: LISTEN, and the advisory
     * locks held across transactions (migrations, retention). DATABASE_URL unless set.
     */
    databaseListenUrl: e.DATABASE_LISTEN_URL ?? e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    /** Deadline of each Redis command on a request's path (the shared rate limit). */
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    /** Deadline of each enqueue a request makes (a ping, an admin's redelivery or retry pass). */
    queueCommandTimeoutMs: e.QUEUE_COMMAND_TIMEOUT_MS,
    /** Deadline of each dependency check of /readyz. */
    readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    /**
     * The listener of /metrics, /healthz and /readyz, apart from the API's port; undefined
     * without METRICS_PORT: no listener, and nothing is measured.
     */
    metrics:
      e.METRICS_PORT === undefined
        ? undefined
        : {
            port: e.METRICS_PORT,
            host: e.METRICS_HOST,
            /** Deadline of each reading a scrape makes (Postgres, Redis, the queue). */
            readingTimeoutMs: e.METRICS_READING_TIMEOUT_MS,
          },
    /** Embedded mode: PGlite under dataDir instead of DATABASE_URL. */
    embedded: e.DATABASE_URL === undefined,
    dataDir,
    secretKey: e.SECRET_KEY ?? localSecretKey(dataDir),
    logLevel: e.LOG_LEVEL,
    oauthCodeTtlSeconds: e.OAUTH_CODE_TTL_SECONDS,
    /** Which origins the token endpoint and the metadata answer: each origin's verdict, cached. */
    corsOrigins: {
      /** A public client's origin is trusted this long; a client deleted meanwhile keeps CORS. */
      knownMaxAgeMs: e.CORS_KNOWN_ORIGIN_MAX_AGE_MS,
      /** An unknown origin is looked up again after this long, so a new client works soon. */
      unknownMaxAgeMs: e.CORS_UNKNOWN_ORIGIN_MAX_AGE_MS,
      /** Origins remembered at most; the least recently asked is forgotten first. */
      maxEntries: e.CORS_ORIGIN_CACHE_SIZE,
    },
    rateLimit: { max: e.RATE_LIMIT_MAX, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS },
    authRateLimitMax: e.AUTH_RATE_LIMIT_MAX,
    /** Browser pages per client address per minute. */
    pageRateLimitMax: e.PAGE_RATE_LIMIT_MAX,
    /** Sign-ins on one account from an address and browser it does not know: at once, per minute. */
    signInAccountCaps: {
      concurrent: e.SIGN_IN_ACCOUNT_CONCURRENCY,
      perMinute: e.SIGN_IN_ACCOUNT_PER_MINUTE,
    },
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    migrateOnStart: e.MIGRATE_ON_START,
    /** Fastify's trustProxy: false, or the proxies' addresses and CIDRs. */
    trustProxy: e.TRUST_PROXY,
    /**
     * Redis key prefix of the job queue and the rate-limit budgets, so deployments sharing a
     * Redis stay apart.
     */
    queuePrefix: e.QUEUE_PREFIX,
    workerConcurrency: e.WORKER_CONCURRENCY,
    /** A job's lock; must outlast one delivery attempt (WEBHOOK_DELIVERY_TIMEOUT_MS). */
    workerLockSeconds: e.WORKER_LOCK_SECONDS,
    http: {
      /** Fastify's requestTimeout: the whole request must arrive within it (slow clients). */
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      /** Fastify's connectionTimeout: a socket silent this long is closed. */
      connectionTimeoutMs: e.HTTP_CONNECTION_TIMEOUT_MS,
    },
    postgres: postgresLimitsOf(e),
    /** SIGTERM: how long in-flight requests and delivery attempts get before the process gives up. */
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    /** SIGTERM: how long the API keeps serving, /readyz saying "draining", before it stops accepting. */
    shutdownDrainDelayMs: e.SHUTDOWN_DRAIN_DELAY_MS,
    /** A browser session unused this long is signed out (besides its 8-hour lifetime). */
    sessionIdleTimeoutMs: e.SESSION_IDLE_TIMEOUT_MINUTES * 60_000,
    /** PUBLIC_URL is https: Secure cookies and HSTS, whatever NODE_ENV says. */
    httpsOnly: publicUrl.startsWith("https:"),
    /** Markdown bodies (pages, meeting minutes): converted off the event loop, and bounded. */
    richText: {
      /** Worker threads converting markdown. */
      threads: e.MARKDOWN_THREADS,
      /** A conversion still running after this long is stopped and the request refused. */
      timeoutMs: e.MARKDOWN_TIMEOUT_MS,
      /** The most a stored body may take, in bytes of rich-text JSON (after an append too). */
      maxBytes: e.RICH_TEXT_MAX_BYTES,
    },
    /** The newest revisions kept per page; older ones are deleted by the write that adds one. */
    pageRevisionsKept: e.PAGE_REVISIONS_KEPT,
    /** The answers of workspace reads kept in the process; none with maxCharacters 0. */
    readCache: { maxCharacters: e.READ_CACHE_MAX_CHARACTERS, maxAgeMs: e.READ_CACHE_MAX_AGE_MS },
    /** OpenTelemetry traces over OTLP/HTTP; undefined when off (the default). */
    tracing: tracingOf(e),
    /** The audit log: entries older than the retention are deleted by the worker's recovery loop. */
    auditLog: {
      retentionDays: e.AUDIT_LOG_RETENTION_DAYS,
      /** Entries one delete statement takes, so pruning never holds many locks at once. */
      pruneBatchSize: e.AUDIT_LOG_PRUNE_BATCH_SIZE,
    },
    /** The delivery log's retention: settled deliveries and spent change events past it go. */
    retention: {
      olderThanSeconds: e.DELIVERY_LOG_RETENTION_DAYS * 86_400,
      /** Rows one delete statement takes, so the API's writes never wait long on its locks. */
      batchSize: e.RETENTION_BATCH_SIZE,
      /** How often the worker runs it. */
      intervalMs: e.RETENTION_INTERVAL_MS,
    },
    webhooks: {
      /** Cron pattern of the daily retry pass. */
      retryCron: e.WEBHOOK_RETRY_CRON,
      /** Daily passes a failed delivery gets before it is exhausted. */
      retryPasses: e.WEBHOOK_RETRY_PASSES,
      /** Deliveries the daily pass claims and queues at a time. */
      retryPassBatchSize: e.WEBHOOK_RETRY_PASS_BATCH_SIZE,
      /** Delivery jobs the worker's pass lets wait in the queue; the rest wait in Postgres. */
      queueWindow: e.WEBHOOK_QUEUE_WINDOW,
      /** How long a pass that found the queue full waits before it goes on. */
      queueWindowWaitMs: e.WEBHOOK_QUEUE_WINDOW_WAIT_MS,
      /** Delays (seconds) of the quick retries before a delivery falls to the daily pass. */
      quickRetrySeconds: e.WEBHOOK_QUICK_RETRIES,
      autoDisableDays: e.WEBHOOK_AUTO_DISABLE_DAYS,
      relayIntervalMs: e.WEBHOOK_RELAY_INTERVAL_MS,
      /** Change events the relay fans out per statement. */
      relayBatchSize: e.WEBHOOK_RELAY_BATCH_SIZE,
      /** Webhooks one organisation may register: each change fans out to every one of them. */
      maxPerOrganization: e.WEBHOOK_MAX_PER_ORGANIZATION,
      /** How often the recovery loop runs. */
      recoveryIntervalMs: e.WEBHOOK_RECOVERY_INTERVAL_MS,
      /** How late a due delivery must be for the recovery loop to queue it again. */
      overdueAfterMs: e.WEBHOOK_OVERDUE_AFTER_MS ?? e.WEBHOOK_RECOVERY_INTERVAL_MS,
      /** Overdue deliveries one run of the recovery loop queues again. */
      recoveryBatchSize: e.WEBHOOK_RECOVERY_BATCH_SIZE,
      /** Bound on one attempt's whole exchange (spec: a 2xx within 10 s). */
      deliveryTimeoutMs: e.WEBHOOK_DELIVERY_TIMEOUT_MS,
      /** The dispatcher's fairness caps and memory bounds; see dispatcher.ts. */
      dispatch: {
        maxInFlightPerWebhook: e.WEBHOOK_MAX_IN_FLIGHT,
        maxInFlightPerOrganization: e.WEBHOOK_MAX_IN_FLIGHT_PER_ORGANIZATION,
        maxPending: e.WEBHOOK_MAX_PENDING,
        maxPendingPerWebhook: e.WEBHOOK_MAX_PENDING_PER_WEBHOOK,
      },
      /** The circuit breaker per webhook; see circuit-breaker.ts. */
      breaker: {
        windowSeconds: e.WEBHOOK_BREAKER_WINDOW_SECONDS,
        cooldownSeconds: e.WEBHOOK_BREAKER_COOLDOWN_SECONDS,
        maxCooldownSeconds: e.WEBHOOK_BREAKER_MAX_COOLDOWN_SECONDS,
      },
      /** Private networks deliveries may reach on purpose, besides public addresses. */
      allowedPrivateRanges: e.WEBHOOK_ALLOWED_PRIVATE_RANGES,
    },
  };
});

export type Config = z.output<typeof configSchema>;
export type PostgresLimits = Config["postgres"];

/** The bounds a PostgreSQL pool gets unless the environment sets others. */
export const DEFAULT_POSTGRES_LIMITS: PostgresLimits = postgresLimitsOf(
  environmentSchema.parse({}),
);

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(
    Object.fromEntries(
      Object.entries(env).filter(([name, value]) => value !== "" || EMPTY_IS_A_VALUE.has(name)),
    ),
  );
  if (!parsed.success) {
    throw new ConfigError(`Invalid configuration: ${describeIssues(parsed.error)}`);
  }
  return parsed.data;
}
