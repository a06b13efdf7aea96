import { randomBytes, randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq, like } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client.js";
import {
  changeEvents,
  tasks,
  webhookAttempts,
  webhookDeliveries,
} from "../../src/db/schema/index.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { Receiver } from "../support/receiver.js";
import {
  type Answer,
  call,
  type Exit,
  HANG_MS,
  HttpSession,
  mintMemberToken,
  type ServiceProcess,
  startService,
  subscribeToTaskCreated,
} from "./service-process.js";

// A rolling deploy: three `svc serve` and two `svc worker` processes on one PostgreSQL and one
// Redis prefix, behind a round-robin proxy, each replaced in turn (SIGTERM, then a new process
// that must be ready before the next goes) while clients write and read at a steady rate.

const RATE_LIMIT_MAX = 20;
/** Load tokens, so that no load token spends its budget of RATE_LIMIT_MAX in the window. */
const LOAD_TOKENS = 40;
/** One write and one read through the proxy every LOAD_INTERVAL_MS. */
const LOAD_INTERVAL_MS = 150;
const HOOK = "/hook";
/**
 * The load client's patience: this test counts failed requests, not slow ones, and on a shared
 * two-core machine running seven service processes a request now and then takes over HANG_MS.
 */
const CLIENT_DEADLINE_MS = 15_000;
/** How often the proxy asks each upstream's /readyz. */
const HEALTH_CHECK_INTERVAL_MS = 200;
/** SHUTDOWN_DRAIN_DELAY_MS: several health checks, so the proxy has moved away before the close. */
const DRAIN_DELAY_MS = 1500;

let testDatabase: TestDatabase;
let database: Database;
let receiver: Receiver;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let env: Record<string, string>;
let proxy: RoundRobinProxy;
const apis: ServiceProcess[] = [];
const workers: ServiceProcess[] = [];
const everyProcess: ServiceProcess[] = [];

type Forwarded = {
  upstream: string;
  method?: string;
  sentAt: number;
  answeredInMs?: number;
  status?: number;
};

/**
 * A load balancer in miniature, doing what docs/production.md asks of one: each request goes to
 * the next upstream in turn among those whose /readyz answered 200 at the last check. When an
 * upstream refuses the connection (a process that stopped listening) the request goes to the next
 * one, as nginx's `proxy_next_upstream error` does for connect errors; any other upstream failure
 * is a 502.
 */
class RoundRobinProxy {
  private upstreams: string[] = [];
  private readonly ready = new Set<string>();
  private next = 0;
  private server: Server | undefined;
  private healthChecks: NodeJS.Timeout | undefined;
  /** Requests passed on to another upstream after a refused connection. */
  refusedConnections = 0;
  /** What went wrong between the proxy and an upstream, answered 502. */
  readonly failures: string[] = [];
  /** Every request passed to an upstream, to tell which one left a request without an answer. */
  readonly forwarded: Forwarded[] = [];
  url = "";

  /** An upstream that has just answered /readyz with 200. */
  add(url: string): void {
    this.upstreams.push(url);
    this.ready.add(url);
  }

  remove(url: string): void {
    this.upstreams = this.upstreams.filter((upstream) => upstream !== url);
    this.ready.delete(url);
  }

  private checkHealth(): void {
    for (const upstream of this.upstreams) {
      call(`${upstream}/readyz`)
        .then((answer) => answer.status === 200)
        .catch(() => false)
        .then((ready) => {
          if (!this.upstreams.includes(upstream)) return;
          if (ready) this.ready.add(upstream);
          else this.ready.delete(upstream);
        });
    }
  }

  /** The upstreams in rotation: the ready ones, or all of them while none is. */
  private rotation(): string[] {
    const ready = this.upstreams.filter((upstream) => this.ready.has(upstream));
    return ready.length > 0 ? ready : this.upstreams;
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        this.forward(request, Buffer.concat(chunks), this.rotation().length)
          .then((upstream) => {
            const headers = { ...upstream.headers };
            // Hop-by-hop: the upstream's connection is not the client's.
            delete headers.connection;
            delete headers["keep-alive"];
            response.writeHead(upstream.statusCode ?? 502, headers);
            upstream.pipe(response);
          })
          .catch((error: Error) => {
            this.failures.push(`${request.method} ${request.url}: ${error.message}`);
            response.writeHead(502).end();
          });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.healthChecks = setInterval(() => this.checkHealth(), HEALTH_CHECK_INTERVAL_MS);
    return this;
  }

  private forward(request: IncomingMessage, body: Buffer, triesLeft: number) {
    const rotation = this.rotation();
    const upstream = rotation[this.next++ % rotation.length];
    return new Promise<IncomingMessage>((resolve, reject) => {
      if (upstream === undefined) return reject(new Error("no upstream"));
      // A connection per request (nginx without `keepalive`): no idle upstream connection for a
      // stopping process to close under a request.
      const forwarded = httpRequest(`${upstream}${request.url}`, {
        method: request.method,
        headers: { ...request.headers, connection: "close" },
        agent: false,
      });
      const trace: Forwarded = { upstream, method: request.method, sentAt: performance.now() };
      this.forwarded.push(trace);
      forwarded.once("response", (answer) => {
        trace.answeredInMs = Math.round(performance.now() - trace.sentAt);
        trace.status = answer.statusCode;
        resolve(answer);
      });
      forwarded.once("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "ECONNREFUSED" && triesLeft > 1) {
          this.refusedConnections += 1;
          resolve(this.forward(request, body, triesLeft - 1));
        } else reject(error);
      });
      forwarded.end(body);
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.healthChecks);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

beforeAll(async () => {
  [testDatabase, receiver, proxy] = await Promise.all([
    createTestDatabase({ poolSize: 3 }),
    new Receiver().start(),
    new RoundRobinProxy().start(),
  ]);
  database = testDatabase.database;
  fixtures = await importOAuthWorkspaces(database.db);
  await subscribeToTaskCreated(database.db, fixtures.acme, receiver.url(HOOK));
  env = {
    DATABASE_URL: testDatabase.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `faults-${randomBytes(6).toString("hex")}`,
    WEBHOOK_RELAY_INTERVAL_MS: "100",
    WEBHOOK_RECOVERY_INTERVAL_MS: "1000",
    SHUTDOWN_TIMEOUT_MS: "5000",
    SHUTDOWN_DRAIN_DELAY_MS: String(DRAIN_DELAY_MS),
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    DATABASE_POOL_SIZE: "5",
  };
  const started = await Promise.all([
    startService("serve", env),
    startService("serve", env),
    startService("serve", env),
    startService("worker", env),
    startService("worker", env),
  ]);
  everyProcess.push(...started);
  apis.push(...started.slice(0, 3));
  workers.push(...started.slice(3));
  for (const api of apis) proxy.add(api.url);
}, 120_000);
afterAll(async () => {
  await Promise.all(everyProcess.map((service) => service.kill()));
  await proxy?.stop();
  await receiver?.stop();
  await testDatabase?.drop();
});

function mint() {
  return mintMemberToken(database.db, fixtures.acme, [
    "projects:read",
    "tasks:read",
    "tasks:write",
  ]);
}

/** When each process was signalled and replaced, for the message of a failure. */
const timeline: { at: number; signalled?: string; replacedBy?: string }[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The client's side of the load: what it sent, what it retried, and what it was not promised. */
class Client {
  sent = 0;
  retried503 = 0;
  readonly unexpected: string[] = [];
  /** Each write's title and the task id it was finally answered with. */
  readonly written = new Map<string, string>();

  /**
   * Sends a request through the proxy until it gets an answer other than a 503 with Retry-After,
   * which it waits out (docs/api.md, "Errors"); a write carries one Idempotency-Key throughout,
   * so a retry never writes twice.
   */
  async send(path: string, token: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> =
      body === undefined ? {} : { "idempotency-key": randomUUID() };
    for (;;) {
      this.sent += 1;
      const answer = await call(`${proxy.url}${path}`, {
        token,
        body,
        headers,
        deadlineMs: CLIENT_DEADLINE_MS,
      });
      const retryAfter = Number(answer.headers.get("retry-after"));
      if (answer.status !== 503 || !(retryAfter > 0)) return answer;
      this.retried503 += 1;
      await sleep(retryAfter * 1000);
    }
  }

  async write(token: string, title: string): Promise<void> {
    const answer = await this.send("/api/v1/projects/rover/tasks", token, { title }).catch(
      (error: Error) => ({ status: 0, text: error.message, json: () => null }),
    );
    if (answer.status === 200) this.written.set(title, answer.json().data.id);
    else this.unexpected.push(`write ${title}: ${answer.status} ${answer.text}`);
  }

  async read(token: string): Promise<void> {
    const answer = await this.send("/api/v1/projects/rover/tasks", token).catch((error: Error) => ({
      status: 0,
      text: error.message,
    }));
    if (answer.status !== 200) this.unexpected.push(`read: ${answer.status} ${answer.text}`);
  }
}

/** Writes and reads through the proxy every LOAD_INTERVAL_MS until `stop()`, then waits for all. */
function steadyLoad(client: Client, tokens: string[]) {
  const inFlight: Promise<void>[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i += 1) {
      const token = tokens[i % tokens.length] ?? "";
      inFlight.push(client.write(token, `rolling ${i}`), client.read(token));
      await sleep(LOAD_INTERVAL_MS);
    }
  })();
  return async () => {
    running = false;
    await loop;
    await Promise.all(inFlight);
  };
}

async function isReady(service: ServiceProcess): Promise<boolean> {
  return (await call(`${service.url}/readyz`).catch(() => undefined))?.status === 200;
}

/**
 * Replaces `old` as a deploy does: SIGTERM, and a new process of the same kind that must be
 * ready (its /readyz answers 200; a worker once it says it has started) before the proxy sends
 * it requests. The stopping API stays in the proxy's list until it has exited: the proxy learns
 * that it is going from its /readyz and, failing that, from refused connections.
 */
async function replace(old: ServiceProcess): Promise<{ exit: Exit; fresh: ServiceProcess }> {
  timeline.push({ at: performance.now(), signalled: old.url });
  old.child.kill("SIGTERM");
  const starting = startService(old.command, env);
  if (old.command === "serve") {
    // Still serving, it tells the load balancer to move away.
    const readiness = await eventually(async () => {
      const answer = await call(`${old.url}/readyz`);
      return answer.status === 503 ? answer.json() : null;
    }, HANG_MS);
    expect(readiness).toEqual({ status: "draining", checks: {} });
  }
  const [exit, fresh] = await Promise.all([old.exited, starting]);
  everyProcess.push(fresh);
  if (old.command === "serve") {
    await eventually(() => isReady(fresh), 10_000);
    proxy.add(fresh.url);
    proxy.remove(old.url);
  }
  timeline.push({ at: performance.now(), replacedBy: fresh.url });
  return { exit, fresh };
}

describe("a rolling restart of three API processes and two workers under load", () => {
  it("loses, doubles and fails nothing, and keeps one rate-limit budget and revocation", async () => {
    const started = performance.now();
    const tokens = await Promise.all(Array.from({ length: LOAD_TOKENS }, () => mint()));
    const client = new Client();
    // A fresh process answers its first requests slowly (modules, JIT, pools): once each, first.
    const [warmUp] = tokens;
    for (const api of apis) {
      await call(`${api.url}/api/v1/projects/rover/tasks`, { token: warmUp?.token });
    }
    const stopLoad = steadyLoad(
      client,
      tokens.map(({ token }) => token),
    );
    await sleep(1000);
    const exits: Exit[] = [];
    for (const group of [apis, workers]) {
      for (let i = 0; i < group.length; i += 1) {
        const { exit, fresh } = await replace(group[i] as ServiceProcess);
        exits.push(exit);
        group[i] = fresh;
      }
    }
    await sleep(500);
    await stopLoad();

    // Every request answered, or answered after retries of the documented 503.
    const slow = proxy.forwarded.filter((trace) => (trace.answeredInMs ?? HANG_MS) >= HANG_MS);
    const slowest = Math.max(...proxy.forwarded.map((trace) => trace.answeredInMs ?? 0));
    expect(client.unexpected, JSON.stringify({ slow, timeline })).toEqual([]);
    expect(proxy.failures).toEqual([]);
    // Every process drained and exited cleanly.
    expect(exits).toEqual(Array(exits.length).fill({ code: 0, signal: null }));

    // Each write made one task, retried or not.
    const written = await database.db
      .select({ id: tasks.id, title: tasks.title })
      .from(tasks)
      .where(like(tasks.title, "rolling %"));
    expect(written.map((task) => task.title).toSorted()).toEqual(
      [...client.written.keys()].toSorted(),
    );
    expect(new Map(written.map((task) => [task.title, task.id]))).toEqual(client.written);

    // Each change event fanned out once, and each delivered (none lost).
    const events = await database.db
      .select({ id: changeEvents.id })
      .from(changeEvents)
      .where(eq(changeEvents.type, "task.created"));
    expect(events).toHaveLength(client.written.size);
    const deliveries = await eventually(async () => {
      const rows = await database.db.select().from(webhookDeliveries);
      return rows.length >= events.length && rows.every((row) => row.status === "delivered")
        ? rows
        : null;
    }, 30_000);
    expect(deliveries.map((row) => row.changeEventId).toSorted()).toEqual(
      events.map((event) => event.id).toSorted(),
    );

    // Each attempt sent once: the receiver saw each delivery as often as it has attempt rows.
    const attempts = await database.db.select().from(webhookAttempts);
    const attemptsPerDelivery = new Map<string, number>();
    for (const attempt of attempts) {
      attemptsPerDelivery.set(
        attempt.deliveryId,
        (attemptsPerDelivery.get(attempt.deliveryId) ?? 0) + 1,
      );
    }
    const receivedPerDelivery = new Map<string, number>();
    for (const request of receiver.on(HOOK)) {
      const id = String(request.headers["x-service-delivery"]);
      receivedPerDelivery.set(id, (receivedPerDelivery.get(id) ?? 0) + 1);
    }
    expect(receivedPerDelivery).toEqual(attemptsPerDelivery);
    expect(new Set(receivedPerDelivery.keys())).toEqual(new Set(deliveries.map((row) => row.id)));

    console.info(
      JSON.stringify({
        restarts: exits.length,
        requestsSent: client.sent,
        writes: client.written.size,
        retried503: client.retried503,
        refusedConnectionsPassedOn: proxy.refusedConnections,
        deliveries: deliveries.length,
        attempts: attempts.length,
        slowestUpstreamAnswerMs: slowest,
        testSeconds: Math.round((performance.now() - started) / 100) / 10,
      }),
    );
  }, 240_000);

  it("shares one rate-limit budget per token across the new instances", async () => {
    const { token } = await mint();
    const statuses: number[] = [];
    for (let i = 0; i < 2 * RATE_LIMIT_MAX; i += 1) {
      statuses.push((await call(`${apis[i % 3]?.url}/api/v1/me`, { token })).status);
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(RATE_LIMIT_MAX);
    expect(statuses.filter((status) => status === 429)).toHaveLength(RATE_LIMIT_MAX);
  });

  it("refuses a token on all three instances within a second of its revocation through one", async () => {
    const { id, token } = await mint();
    const me = (api: ServiceProcess) =>
      call(`${api.url}/api/v1/me`, { token }).then((answer) => answer.status);
    expect(await Promise.all(apis.map(me))).toEqual([200, 200, 200]);
    const [first] = apis as [ServiceProcess];
    const admin = new HttpSession(first.url);
    await admin.signIn("admin@acme.example", PASSWORD);
    const _csrf = await admin.csrfTokenOf("/admin/acme/tokens");
    const revoked = await admin.post(`/admin/acme/tokens/${id}/revoke`, { _csrf });
    expect(revoked.status).toBe(303);
    // A revocation must reach every instance within a second; each instance is asked until it
    // refuses (a refused token spends its address's budget, so no further).
    const revokedAt = performance.now();
    const refusedAfterMs: number[] = [];
    const refusedWithinASecond = async (api: ServiceProcess) => {
      for (;;) {
        const status = await me(api);
        const elapsedMs = performance.now() - revokedAt;
        if (status !== 200) refusedAfterMs.push(Math.round(elapsedMs));
        if (status !== 200 || elapsedMs > 1000) return status;
        await sleep(50);
      }
    };
    expect(await Promise.all(apis.map(refusedWithinASecond))).toEqual([401, 401, 401]);
    console.info(JSON.stringify({ revokedTokenRefusedAfterMs: refusedAfterMs }));
  });
});
