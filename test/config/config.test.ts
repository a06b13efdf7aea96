import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { TEST_SECRET_KEY } from "../support/app.js";

const base = { SECRET_KEY: TEST_SECRET_KEY, DATABASE_URL: "postgres://127.0.0.1/unused" };

describe("the webhook quick-retry ladder", () => {
  it("defaults to 1 min, 10 min, 1 h", () => {
    expect(loadConfig(base).webhooks.quickRetrySeconds).toEqual([60, 600, 3600]);
  });

  it("is turned off by an empty WEBHOOK_QUICK_RETRIES", () => {
    expect(loadConfig({ ...base, WEBHOOK_QUICK_RETRIES: "" }).webhooks.quickRetrySeconds).toEqual(
      [],
    );
  });

  it("still treats other empty variables as unset", () => {
    expect(loadConfig({ ...base, PORT: "" }).port).toBe(3000);
  });
});

describe("TRUST_PROXY", () => {
  it("trusts no proxy by default, and the proxies' addresses when set", () => {
    expect(loadConfig(base).trustProxy).toBe(false);
    expect(loadConfig({ ...base, TRUST_PROXY: "10.0.0.1,10.1.0.0/16" }).trustProxy).toBe(
      "10.0.0.1,10.1.0.0/16",
    );
  });

  it("refuses to trust every hop, or a bare hop count Fastify would ignore", () => {
    expect(() => loadConfig({ ...base, TRUST_PROXY: "true" })).toThrow(/TRUST_PROXY/);
    expect(() => loadConfig({ ...base, TRUST_PROXY: "1" })).toThrow(/TRUST_PROXY/);
  });
});

describe("WEBHOOK_RETRY_CRON", () => {
  it("takes a cron pattern", () => {
    expect(loadConfig({ ...base, WEBHOOK_RETRY_CRON: "30 2 * * 1-5" }).webhooks.retryCron).toBe(
      "30 2 * * 1-5",
    );
  });

  it.each(["not a cron", "61 * * * *", "* * * * * * *"])(
    "refuses %j at start, naming the variable",
    (pattern) => {
      expect(() => loadConfig({ ...base, WEBHOOK_RETRY_CRON: pattern })).toThrow(
        /WEBHOOK_RETRY_CRON/,
      );
    },
  );
});

describe("WEBHOOK_ALLOWED_PRIVATE_RANGES", () => {
  it("names no private range by default, and the CIDRs given when set", () => {
    expect(loadConfig(base).webhooks.allowedPrivateRanges).toEqual([]);
    expect(
      loadConfig({ ...base, WEBHOOK_ALLOWED_PRIVATE_RANGES: "10.20.0.0/16, fd00:1::/64" }).webhooks
        .allowedPrivateRanges,
    ).toEqual(["10.20.0.0/16", "fd00:1::/64"]);
  });

  it("refuses what is not a CIDR, naming the variable", () => {
    expect(() => loadConfig({ ...base, WEBHOOK_ALLOWED_PRIVATE_RANGES: "10.0.0.1" })).toThrow(
      /WEBHOOK_ALLOWED_PRIVATE_RANGES: not a CIDR: 10\.0\.0\.1/,
    );
  });
});

describe("timeouts", () => {
  it("bound requests, connections, the database and shutdown by default", () => {
    const config = loadConfig(base);
    expect(config.http).toEqual({ requestTimeoutMs: 30_000, connectionTimeoutMs: 60_000 });
    expect(config.postgres).toEqual({
      poolSize: 10,
      connectTimeoutMs: 1000,
      statementTimeoutMs: 10_000,
      idleInTransactionTimeoutMs: 10_000,
      preparedStatements: true,
    });
    expect(config.shutdownTimeoutMs).toBe(20_000);
  });

  it("put LISTEN and the session locks on DATABASE_URL unless DATABASE_LISTEN_URL says otherwise", () => {
    const pooled = "postgres://svc@pgbouncer:6432/workspace";
    const direct = "postgres://svc@db:5432/workspace";
    expect(loadConfig({ ...base, DATABASE_URL: pooled }).databaseListenUrl).toBe(pooled);
    expect(
      loadConfig({ ...base, DATABASE_URL: pooled, DATABASE_LISTEN_URL: direct }).databaseListenUrl,
    ).toBe(direct);
    const embedded = { SECRET_KEY: TEST_SECRET_KEY, DATABASE_LISTEN_URL: direct };
    expect(() => loadConfig(embedded)).toThrow(/DATABASE_LISTEN_URL: needs DATABASE_URL/);
    expect(
      loadConfig({ ...base, DATABASE_PREPARED_STATEMENTS: "false" }).postgres.preparedStatements,
    ).toBe(false);
  });

  it("give a webhook delivery attempt the spec's 10 s by default", () => {
    expect(loadConfig(base).webhooks.deliveryTimeoutMs).toBe(10_000);
  });

  it("give Redis on a request's path, the queue and each readiness check a deadline by default", () => {
    const config = loadConfig(base);
    expect(config.redisCommandTimeoutMs).toBe(50);
    expect(config.queueCommandTimeoutMs).toBe(500);
    expect(config.readinessTimeoutMs).toBe(500);
    expect(() => loadConfig({ ...base, REDIS_COMMAND_TIMEOUT_MS: "0" })).toThrow(
      /REDIS_COMMAND_TIMEOUT_MS/,
    );
  });

  it("drains for no time by default, for the milliseconds given, never for a negative time", () => {
    expect(loadConfig(base).shutdownDrainDelayMs).toBe(0);
    expect(loadConfig({ ...base, SHUTDOWN_DRAIN_DELAY_MS: "5000" }).shutdownDrainDelayMs).toBe(
      5000,
    );
    expect(() => loadConfig({ ...base, SHUTDOWN_DRAIN_DELAY_MS: "-1" })).toThrow(
      /SHUTDOWN_DRAIN_DELAY_MS/,
    );
  });

  it("refuses a timeout that is not a positive number of milliseconds", () => {
    expect(() => loadConfig({ ...base, DATABASE_STATEMENT_TIMEOUT_MS: "0" })).toThrow(
      /DATABASE_STATEMENT_TIMEOUT_MS/,
    );
  });
});

describe("WEBHOOK_MAX_PER_ORGANIZATION", () => {
  it("defaults to 20 and takes a positive whole number", () => {
    expect(loadConfig(base).webhooks.maxPerOrganization).toBe(20);
    expect(
      loadConfig({ ...base, WEBHOOK_MAX_PER_ORGANIZATION: "50" }).webhooks.maxPerOrganization,
    ).toBe(50);
    expect(() => loadConfig({ ...base, WEBHOOK_MAX_PER_ORGANIZATION: "0" })).toThrow(
      /WEBHOOK_MAX_PER_ORGANIZATION/,
    );
  });
});

describe("WORKER_LOCK_SECONDS", () => {
  it("must outlast one delivery attempt: 11 s and more with the default 10 s timeout", () => {
    expect(loadConfig({ ...base, WORKER_LOCK_SECONDS: "11" }).workerLockSeconds).toBe(11);
    expect(() => loadConfig({ ...base, WORKER_LOCK_SECONDS: "10" })).toThrow(
      /WORKER_LOCK_SECONDS: must outlast one delivery attempt/,
    );
  });

  it("may be a few seconds where attempts are shorter", () => {
    const short = { ...base, WORKER_LOCK_SECONDS: "3", WEBHOOK_DELIVERY_TIMEOUT_MS: "2000" };
    expect(loadConfig(short).workerLockSeconds).toBe(3);
  });
});

describe("SECRET_KEY", () => {
  it("is required in production", () => {
    const production = { NODE_ENV: "production", DATABASE_URL: base.DATABASE_URL };
    expect(() => loadConfig(production)).toThrow(
      "Invalid configuration: SECRET_KEY is required in production",
    );
    expect(loadConfig({ ...production, SECRET_KEY: TEST_SECRET_KEY }).secretKey).toBe(
      TEST_SECRET_KEY,
    );
  });
});

describe("PUBLIC_URL", () => {
  it("is normalised: scheme and host lower-cased, default port and trailing slash dropped", () => {
    const config = loadConfig({ ...base, PUBLIC_URL: "HTTPS://Work.Example.COM:443/Svc/" });
    expect(config.publicUrl).toBe("https://work.example.com/Svc");
    expect(config.httpsOnly).toBe(true);
  });

  it("keeps a root URL without a trailing slash, and plain http not https-only", () => {
    const config = loadConfig({ ...base, PUBLIC_URL: "Http://LOCALHOST:3000/" });
    expect(config.publicUrl).toBe("http://localhost:3000");
    expect(config.httpsOnly).toBe(false);
  });
});

describe("tracing (OTEL_*)", () => {
  it("is off without an OTLP endpoint", () => {
    expect(loadConfig(base).tracing).toBeUndefined();
  });

  it("sends to the endpoint's /v1/traces, or to the traces endpoint as it is", () => {
    const endpoint = { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" };
    expect(loadConfig(endpoint).tracing).toMatchObject({
      tracesUrl: "http://collector:4318/v1/traces",
      serviceName: "workspace-service",
      scheduleDelayMs: 5000,
    });
    expect(
      loadConfig({ ...endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://vendor.example/otlp" })
        .tracing?.tracesUrl,
    ).toBe("https://vendor.example/otlp");
  });

  it("reads the exporter's headers, percent-decoded, and refuses what is not name=value", () => {
    const endpoint = { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(
      loadConfig({ ...endpoint, OTEL_EXPORTER_OTLP_HEADERS: "api-key=a%20b, x-team=c" }).tracing
        ?.headers,
    ).toEqual({ "api-key": "a b", "x-team": "c" });
    expect(() => loadConfig({ ...endpoint, OTEL_EXPORTER_OTLP_HEADERS: "api-key" })).toThrow(
      /OTEL_EXPORTER_OTLP_HEADERS/,
    );
  });

  it("refuses an export timeout that would outlast the shutdown, only with tracing on", () => {
    const traced = { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(() =>
      loadConfig({ ...traced, OTEL_EXPORTER_OTLP_TIMEOUT: "20000", SHUTDOWN_TIMEOUT_MS: "20000" }),
    ).toThrow(/OTEL_EXPORTER_OTLP_TIMEOUT/);
    expect(loadConfig({ ...base, SHUTDOWN_TIMEOUT_MS: "1500" }).tracing).toBeUndefined();
  });

  it("refuses an export batch larger than the queue", () => {
    expect(() =>
      loadConfig({
        ...base,
        OTEL_BSP_MAX_QUEUE_SIZE: "100",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "200",
      }),
    ).toThrow(/OTEL_BSP_MAX_EXPORT_BATCH_SIZE/);
  });
});

describe("METRICS_PORT", () => {
  it("opens no listener when unset, and one on the loopback unless METRICS_HOST says otherwise", () => {
    expect(loadConfig(base).metrics).toBeUndefined();
    expect(loadConfig({ ...base, METRICS_PORT: "9464" }).metrics).toEqual({
      port: 9464,
      host: "127.0.0.1",
      readingTimeoutMs: 1000,
    });
    expect(() => loadConfig({ ...base, METRICS_PORT: "70000" })).toThrow(/METRICS_PORT/);
  });
});
