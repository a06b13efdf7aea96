import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents } from "../../src/db/schema/index.js";
import { call, type ServiceProcess, startService } from "../faults/service-process.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { ROOT, svcCommand } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";
import { roverWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

// The service as deployed (`svc serve` and `svc worker` from the bundle, on PostgreSQL and Redis)
// exporting to a real OTLP/HTTP receiver, and a third process with no endpoint beside them.

const RECORD_IMPORTS = path.join(ROOT, "test/support/record-imports.mjs");
const SERVER = 2;
const CLIENT = 3;

let database: TestDatabase;
let receiver: Receiver;
let otlp: OtlpReceiver;
let token: string;
let importsDir: string;
let api: ServiceProcess;
let untraced: ServiceProcess;
const services: ServiceProcess[] = [];

/** `svc <command>` recording the modules it imports to `<importsDir>/<name>`. */
async function start(
  name: string,
  command: ServiceProcess["command"],
  env: Record<string, string>,
): Promise<ServiceProcess> {
  const service = await startService(
    command,
    { ...env, RECORD_IMPORTS_TO: path.join(importsDir, name) },
    ["--import", RECORD_IMPORTS, ...svcCommand()],
  );
  services.push(service);
  return service;
}

function importsOf(name: string): string[] {
  return readFileSync(path.join(importsDir, name), "utf8").split("\n").filter(Boolean);
}

beforeAll(async () => {
  [database, receiver, otlp, importsDir] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    new Receiver().start(),
    new OtlpReceiver().start(),
    mkdtemp(path.join(tmpdir(), "svc-imports-")),
  ]);
  const db = database.database.db;
  const { ws } = await roverWithWebhook(db, TEST_SECRET_KEY, receiver, "traces", "/traced");
  token = await mintToken(db, ws);
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `traces-${randomBytes(6).toString("hex")}`,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_QUICK_RETRIES: "",
    RATE_LIMIT_MAX: "100000",
    DATABASE_POOL_SIZE: "3",
  };
  const traced = {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: "50",
  };
  [api, , untraced] = await Promise.all([
    // One connection, so requests wait for it and are handed it by one another.
    start("api", "serve", {
      ...traced,
      OTEL_SERVICE_NAME: "workspace-api",
      DATABASE_POOL_SIZE: "1",
    }),
    start("worker", "worker", { ...traced, OTEL_SERVICE_NAME: "workspace-worker" }),
    start("untraced", "serve", env),
  ]);
});

afterAll(async () => {
  await Promise.all(services.map((service) => service.kill()));
  await Promise.all([receiver?.stop(), otlp?.stop()]);
  await database?.drop();
  if (importsDir !== undefined) await rm(importsDir, { recursive: true, force: true });
});

function spanWhere(match: (span: ReceivedSpan) => boolean) {
  return eventually(() => otlp.spans.find(match));
}

describe("traces (OTEL_EXPORTER_OTLP_ENDPOINT set)", () => {
  it("exports a write's request span with its SQL and Redis spans, and a delivery attempt linked to it", async () => {
    const callerTrace = randomBytes(16).toString("hex");
    const callerSpan = randomBytes(8).toString("hex");
    const created = await call(`${api.url}/api/v1/projects/rover/tasks`, {
      token,
      body: { title: "Traced" },
      headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
    });
    expect(created.status).toBe(200);

    const request = await spanWhere(
      (span) => span.traceId === callerTrace && span.name === "POST /api/v1/projects/:slug/tasks",
    );
    expect(request).toMatchObject({
      service: "workspace-api",
      kind: SERVER,
      parentSpanId: callerSpan,
      attributes: {
        "http.route": "/api/v1/projects/:slug/tasks",
        "http.response.status_code": 200,
      },
    });
    const childOfRequest = (span: ReceivedSpan) =>
      span.traceId === request.traceId && span.parentSpanId === request.spanId;
    const statement = await spanWhere(
      (span) =>
        childOfRequest(span) &&
        span.attributes["db.system.name"] === "postgresql" &&
        String(span.attributes["db.query.text"]).includes('insert into "change_events"'),
    );
    expect(statement.kind).toBe(CLIENT);
    const command = await spanWhere(
      (span) => childOfRequest(span) && span.attributes["db.system.name"] === "redis",
    );
    expect(command.kind).toBe(CLIENT);

    // The change event keeps the request's span; the worker's attempt links back to it.
    const [event] = await database.database.db
      .select({ traceContext: changeEvents.traceContext })
      .from(changeEvents)
      .where(eq(changeEvents.targetId, created.json().data.id));
    expect(event?.traceContext).toBe(`00-${request.traceId}-${request.spanId}-01`);
    const attempt = await spanWhere(
      (span) =>
        span.name === "webhook delivery attempt" &&
        (span.links ?? []).some(
          (link) => link.traceId === request.traceId && link.spanId === request.spanId,
        ),
    );
    expect(attempt).toMatchObject({
      service: "workspace-worker",
      attributes: { "webhook.delivery.status": "delivered", "http.response.status_code": 204 },
    });
    expect(attempt.traceId).not.toBe(request.traceId);
    expect(receiver.on("/traced")).toHaveLength(1);
    await spanWhere(
      (span) =>
        span.traceId === attempt.traceId &&
        span.parentSpanId === attempt.spanId &&
        span.attributes["db.system.name"] === "postgresql",
    );
  });

  it("puts each statement in the trace of its own request, when requests wait for the connection", async () => {
    const traceIds = Array.from({ length: 8 }, () => randomBytes(16).toString("hex"));
    // A URL each, so that every request misses the read cache and sends its statement.
    const answers = await Promise.all(
      traceIds.map((traceId) =>
        call(`${api.url}/api/v1/projects?trace=${traceId}`, {
          token,
          headers: { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` },
        }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(traceIds.map(() => 200));
    for (const traceId of traceIds) {
      const request = await spanWhere((span) => span.traceId === traceId && span.kind === SERVER);
      await spanWhere(
        (span) =>
          span.parentSpanId === request.spanId &&
          span.attributes["db.system.name"] === "postgresql",
      );
    }
  });
});

describe("tracing off (no endpoint)", () => {
  it("loads no OpenTelemetry module, while a traced process does", async () => {
    const created = await call(`${untraced.url}/api/v1/projects/rover/tasks`, {
      token,
      body: { title: "Untraced" },
    });
    expect(created.status).toBe(200);
    const untracedImports = importsOf("untraced");
    // The recorder works: it saw the bundle itself.
    expect(untracedImports.some((url) => url.endsWith(".mjs"))).toBe(true);
    expect(untracedImports.filter((url) => url.includes("@opentelemetry"))).toEqual([]);
    expect(importsOf("api").some((url) => url.includes("/@opentelemetry/sdk-trace/"))).toBe(true);
  });
});
