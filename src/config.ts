import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CronExpressionParser } from "cron-parser";
import ipaddr from "ipaddr.js";
import { z } from "zod";

const booleanFlag = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const positiveInt = z.coerce.number().int().positive();

/** The bounds a PostgreSQL pool gets unless the environment sets others. */
export const DEFAULT_POSTGRES_LIMITS: PostgresLimits = {
  poolSize: 10,
  connectTimeoutMs: 1000,
  statementTimeoutMs: 10_000,
  idleInTransactionTimeoutMs: 10_000,
};

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }).optional(),
  REDIS_COMMAND_TIMEOUT_MS: positiveInt.default(50),
  QUEUE_COMMAND_TIMEOUT_MS: positiveInt.default(500),
  READINESS_TIMEOUT_MS: positiveInt.default(500),
  DATA_DIR: z.string().min(1).default("./data"),
  SECRET_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  OAUTH_CODE_TTL_SECONDS: positiveInt.default(600),
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
  WORKER_LOCK_SECONDS: z.coerce.number().int().min(11).default(30),
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
  WEBHOOK_RECOVERY_INTERVAL_MS: positiveInt.default(60_000),
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
  DATABASE_POOL_SIZE: positiveInt.default(DEFAULT_POSTGRES_LIMITS.poolSize),
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt.default(DEFAULT_POSTGRES_LIMITS.connectTimeoutMs),
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt.default(DEFAULT_POSTGRES_LIMITS.statementTimeoutMs),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: positiveInt.default(
    DEFAULT_POSTGRES_LIMITS.idleInTransactionTimeoutMs,
  ),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(20_000),
  SESSION_IDLE_TIMEOUT_MINUTES: positiveInt.default(30),
  MARKDOWN_THREADS: positiveInt.default(1),
  MARKDOWN_TIMEOUT_MS: positiveInt.default(2000),
  RICH_TEXT_MAX_BYTES: positiveInt.default(1_048_576),
  PAGE_REVISIONS_KEPT: positiveInt.default(20),
  TRUST_PROXY: z
    .string()
    .default("false")
    .transform((value, context) => parseTrustProxy(value, context)),
});

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
 * WEBHOOK_QUICK_RETRIES turns the quick retries off (issue 5).
 */
const EMPTY_IS_A_VALUE = new Set(["WEBHOOK_QUICK_RETRIES"]);

const DURATION = /^(\d+)([smhd]?)$/;
const SECONDS_PER_UNIT: Record<string, number> = { "": 1, s: 1, m: 60, h: 3600, d: 86400 };

/** `90`, `90s`, `15m`, `12h` or `30d` → seconds; null when it is none of those. */
export function parseDuration(input: string): number | null {
  const match = DURATION.exec(input.trim());
  if (match === null) return null;
  const seconds = Number(match[1]) * (SECONDS_PER_UNIT[match[2] ?? ""] ?? 1);
  return Number.isSafeInteger(seconds) && seconds > 0 ? seconds : null;
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

export type Config = {
  isProduction: boolean;
  port: number;
  host: string;
  /** Service root, without a trailing slash; the API base is `${publicUrl}/api/v1`. */
  publicUrl: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /** Deadline of each Redis command on a request's path (the shared rate limit). */
  redisCommandTimeoutMs: number;
  /** Deadline of each enqueue a request makes (a ping, an admin's redelivery or retry pass). */
  queueCommandTimeoutMs: number;
  /** Deadline of each dependency check of /readyz. */
  readinessTimeoutMs: number;
  /** Embedded mode: PGlite under dataDir instead of DATABASE_URL. */
  embedded: boolean;
  dataDir: string;
  secretKey: string;
  logLevel: string;
  oauthCodeTtlSeconds: number;
  rateLimit: { max: number; windowSeconds: number };
  authRateLimitMax: number;
  /** Browser pages per client address per minute. */
  pageRateLimitMax: number;
  /** Sign-ins on one account from an address and browser it does not know: at once, per minute. */
  signInAccountCaps: { concurrent: number; perMinute: number };
  bodyLimitBytes: number;
  migrateOnStart: boolean;
  /** Fastify's trustProxy: false, or the proxies' addresses and CIDRs. */
  trustProxy: false | string;
  /**
   * Redis key prefix of the job queue and the rate-limit budgets, so deployments sharing a Redis
   * stay apart.
   */
  queuePrefix: string;
  workerConcurrency: number;
  /** A job's lock; must outlast one delivery attempt (10 s). */
  workerLockSeconds: number;
  http: {
    /** Fastify's requestTimeout: the whole request must arrive within it (slow clients). */
    requestTimeoutMs: number;
    /** Fastify's connectionTimeout: a socket silent this long is closed. */
    connectionTimeoutMs: number;
  };
  /** Bounds on every PostgreSQL connection of the process (not the embedded PGlite). */
  postgres: PostgresLimits;
  /** A browser session unused this long is signed out (besides its 8-hour lifetime). */
  sessionIdleTimeoutMs: number;
  /** PUBLIC_URL is https: Secure cookies and HSTS, whatever NODE_ENV says. */
  httpsOnly: boolean;
  /** SIGTERM: how long in-flight requests and delivery attempts get before the process gives up. */
  shutdownTimeoutMs: number;
  /** Markdown bodies (pages, meeting minutes): converted off the event loop, and bounded. */
  richText: {
    /** Worker threads converting markdown. */
    threads: number;
    /** A conversion still running after this long is stopped and the request refused. */
    timeoutMs: number;
    /** The most a stored body may take, in bytes of rich-text JSON (after an append too). */
    maxBytes: number;
  };
  /** The newest revisions kept per page; older ones are deleted by the write that adds one. */
  pageRevisionsKept: number;
  webhooks: {
    /** Cron pattern of the daily retry pass. */
    retryCron: string;
    /** Daily passes a failed delivery gets before it is exhausted. */
    retryPasses: number;
    /** Delays (seconds) of the quick retries before a delivery falls to the daily pass. */
    quickRetrySeconds: number[];
    autoDisableDays: number;
    relayIntervalMs: number;
    /** Webhooks one organisation may register: each change fans out to every one of them. */
    maxPerOrganization: number;
    /** How often the recovery loop runs, and how late a due delivery must be for it to act. */
    recoveryIntervalMs: number;
    /** Bound on one attempt's whole exchange (spec: a 2xx within 10 s). */
    deliveryTimeoutMs: number;
    /** The dispatcher's fairness caps and memory bounds; see dispatcher.ts. */
    dispatch: {
      maxInFlightPerWebhook: number;
      maxInFlightPerOrganization: number;
      maxPending: number;
      maxPendingPerWebhook: number;
    };
    /** The circuit breaker per webhook; see circuit-breaker.ts. */
    breaker: { windowSeconds: number; cooldownSeconds: number; maxCooldownSeconds: number };
    /** Private networks deliveries may reach on purpose, besides public addresses. */
    allowedPrivateRanges: string[];
  };
};

export type PostgresLimits = {
  poolSize: number;
  /** Bounds both opening a connection and waiting for a free one of the pool. */
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
};

export class ConfigError extends Error {}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.join(".") || "environment"}: ${issue.message}`)
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
 * `https:` (Secure cookies, HSTS) and the OAuth issuer see one spelling (issue 23).
 */
function normalisePublicUrl(value: string): string {
  const url = new URL(value);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(
    Object.fromEntries(
      Object.entries(env).filter(([name, value]) => value !== "" || EMPTY_IS_A_VALUE.has(name)),
    ),
  );
  if (!parsed.success) {
    throw new ConfigError(`Invalid configuration: ${describeIssues(parsed.error)}`);
  }
  const e = parsed.data;
  const isProduction = e.NODE_ENV === "production";
  const embedded = e.DATABASE_URL === undefined;
  const dataDir = path.resolve(e.DATA_DIR);
  if (isProduction && e.SECRET_KEY === undefined) {
    throw new ConfigError("Invalid configuration: SECRET_KEY is required in production");
  }
  const secretKey = e.SECRET_KEY ?? localSecretKey(dataDir);
  const publicHost = e.HOST === "0.0.0.0" || e.HOST === "::" ? "localhost" : e.HOST;
  const publicUrl = normalisePublicUrl(e.PUBLIC_URL ?? `http://${publicHost}:${e.PORT}`);
  return {
    isProduction,
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    queueCommandTimeoutMs: e.QUEUE_COMMAND_TIMEOUT_MS,
    readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    embedded,
    dataDir,
    secretKey,
    logLevel: e.LOG_LEVEL,
    oauthCodeTtlSeconds: e.OAUTH_CODE_TTL_SECONDS,
    rateLimit: { max: e.RATE_LIMIT_MAX, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS },
    authRateLimitMax: e.AUTH_RATE_LIMIT_MAX,
    pageRateLimitMax: e.PAGE_RATE_LIMIT_MAX,
    signInAccountCaps: {
      concurrent: e.SIGN_IN_ACCOUNT_CONCURRENCY,
      perMinute: e.SIGN_IN_ACCOUNT_PER_MINUTE,
    },
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    migrateOnStart: e.MIGRATE_ON_START,
    trustProxy: e.TRUST_PROXY,
    queuePrefix: e.QUEUE_PREFIX,
    workerConcurrency: e.WORKER_CONCURRENCY,
    workerLockSeconds: e.WORKER_LOCK_SECONDS,
    http: {
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      connectionTimeoutMs: e.HTTP_CONNECTION_TIMEOUT_MS,
    },
    postgres: {
      poolSize: e.DATABASE_POOL_SIZE,
      connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
      idleInTransactionTimeoutMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    sessionIdleTimeoutMs: e.SESSION_IDLE_TIMEOUT_MINUTES * 60_000,
    httpsOnly: publicUrl.startsWith("https:"),
    richText: {
      threads: e.MARKDOWN_THREADS,
      timeoutMs: e.MARKDOWN_TIMEOUT_MS,
      maxBytes: e.RICH_TEXT_MAX_BYTES,
    },
    pageRevisionsKept: e.PAGE_REVISIONS_KEPT,
    webhooks: {
      retryCron: e.WEBHOOK_RETRY_CRON,
      retryPasses: e.WEBHOOK_RETRY_PASSES,
      quickRetrySeconds: e.WEBHOOK_QUICK_RETRIES,
      autoDisableDays: e.WEBHOOK_AUTO_DISABLE_DAYS,
      relayIntervalMs: e.WEBHOOK_RELAY_INTERVAL_MS,
      maxPerOrganization: e.WEBHOOK_MAX_PER_ORGANIZATION,
      recoveryIntervalMs: e.WEBHOOK_RECOVERY_INTERVAL_MS,
      deliveryTimeoutMs: e.WEBHOOK_DELIVERY_TIMEOUT_MS,
      dispatch: {
        maxInFlightPerWebhook: e.WEBHOOK_MAX_IN_FLIGHT,
        maxInFlightPerOrganization: e.WEBHOOK_MAX_IN_FLIGHT_PER_ORGANIZATION,
        maxPending: e.WEBHOOK_MAX_PENDING,
        maxPendingPerWebhook: e.WEBHOOK_MAX_PENDING_PER_WEBHOOK,
      },
      breaker: {
        windowSeconds: e.WEBHOOK_BREAKER_WINDOW_SECONDS,
        cooldownSeconds: e.WEBHOOK_BREAKER_COOLDOWN_SECONDS,
        maxCooldownSeconds: e.WEBHOOK_BREAKER_MAX_COOLDOWN_SECONDS,
      },
      allowedPrivateRanges: e.WEBHOOK_ALLOWED_PRIVATE_RANGES,
    },
  };
}
