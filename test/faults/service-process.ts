import { type ChildProcess, spawn } from "node:child_process";
import type { Scope } from "../../src/core/scopes.js";
import type { Database, Db } from "../../src/db/client.js";
import { openPostgres } from "../../src/db/postgres.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken } from "../../src/modules/tokens/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { userOf } from "../oauth/oauth-fixtures.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { ROOT, svcCommand } from "../support/cli.js";
import type { Workspace } from "../support/fixtures.js";
import { freePort } from "../support/ports.js";

// The service as it is deployed: `svc serve`, `svc worker` or `svc start` in processes of their
// own, reached over real HTTP, signalled and killed like any process.

/** Longer than any answer the service should take; an answer later than this is a hang. */
export const HANG_MS = 5_000;

const OUTPUT_KEPT = 64 * 1024;

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export type ServiceProcess = {
  command: "serve" | "worker" | "start";
  /** The service root (serve and start). */
  url: string;
  child: ChildProcess;
  exited: Promise<Exit>;
  /** The last lines it wrote, for failure messages. */
  output(): string;
  /** SIGKILL unless it already exited. */
  kill(): Promise<Exit>;
};

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/**
 * Starts `svc <command>` on `env` (DATABASE_URL, REDIS_URL, ...) and waits until it serves: the
 * API's greeting for serve and start, the worker's "worker started" log line for a worker.
 */
export async function startService(
  command: ServiceProcess["command"],
  env: Record<string, string>,
  /** How node runs the CLI: the current sources' bundle, or the build's (`dist/svc.mjs`). */
  cli: string[] = svcCommand(),
): Promise<ServiceProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [...cli, command], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SECRET_KEY: TEST_SECRET_KEY,
      // The worker says it has started at info level only.
      LOG_LEVEL: command === "worker" ? "info" : "warn",
      MIGRATE_ON_START: "false",
      // Above the 50 ms default: on a loaded test machine a healthy Redis may take that long, and
      // the tests that count a shared budget must not see a request counted per process.
      REDIS_COMMAND_TIMEOUT_MS: "250",
      HOST: "127.0.0.1",
      PORT: String(port),
      PUBLIC_URL: url,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_KEPT);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<Exit>((resolve) =>
    child.once("exit", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const readyLine = command === "worker" ? '"msg":"worker started"' : "listening on";
  const ready = new Promise<void>((resolve) => {
    const check = () => {
      if (!output.includes(readyLine)) return;
      child.stdout?.off("data", check);
      resolve();
    };
    child.stdout?.on("data", check);
  });
  const outcome = await Promise.race([
    ready.then(() => "ready" as const),
    exited,
    new Promise<"slow">((resolve) => setTimeout(() => resolve("slow"), 60_000)),
  ]);
  const service: ServiceProcess = {
    command,
    url,
    child,
    exited,
    output: () => output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      return exited;
    },
  };
  if (outcome !== "ready") {
    await service.kill();
    throw new Error(`svc ${command} did not start (${JSON.stringify(outcome)}):\n${output}`);
  }
  return service;
}

/** The answer to one HTTP request, with how long it took. */
export type Answer = {
  status: number;
  headers: Headers;
  text: string;
  elapsedMs: number;
  json(): any;
};

export type Call = {
  method?: string;
  token?: string;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** How long the answer may take before it counts as a hang; HANG_MS unless told. */
  deadlineMs?: number;
};

/**
 * One request over real HTTP that must be answered within HANG_MS (or `deadlineMs`): a request
 * left without an answer fails the test as a hang rather than waiting for the test's own timeout.
 */
export async function call(url: string, request: Call = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...request.headers };
  if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`;
  let body: string | undefined;
  if (request.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(request.body);
  } else if (request.form !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(request.form).toString();
  }
  const method = request.method ?? (body === undefined ? "GET" : "POST");
  const deadlineMs = request.deadlineMs ?? HANG_MS;
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method,
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(deadlineMs),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      elapsedMs: performance.now() - started,
      json: () => JSON.parse(text),
    };
  } catch (error) {
    if (error instanceof DOMException && error.name === "TimeoutError") {
      throw new Error(`${method} ${url}: no answer within ${deadlineMs} ms (a hang)`);
    }
    throw error;
  }
}

/** A signed-in browser's cookies over real HTTP, for the admin area and its forms. */
export class HttpSession {
  private readonly cookies = new Map<string, string>();

  constructor(private readonly baseUrl: string) {}

  private keep(answer: Answer): Answer {
    for (const header of answer.headers.getSetCookie()) {
      const [pair = ""] = header.split(";");
      const separator = pair.indexOf("=");
      if (separator > 0) this.cookies.set(pair.slice(0, separator), pair.slice(separator + 1));
    }
    return answer;
  }

  private cookieHeader(): Record<string, string> {
    return { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ") };
  }

  async get(path: string, baseUrl = this.baseUrl): Promise<Answer> {
    return this.keep(await call(`${baseUrl}${path}`, { headers: this.cookieHeader() }));
  }

  async post(path: string, form: Record<string, string>, baseUrl = this.baseUrl) {
    return this.keep(await call(`${baseUrl}${path}`, { form, headers: this.cookieHeader() }));
  }

  /** The CSRF token of the page's first form. */
  async csrfTokenOf(path: string): Promise<string> {
    const page = await this.get(path);
    const token = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
    if (token === undefined) throw new Error(`${path} (${page.status}) has no CSRF token`);
    return token;
  }

  async signIn(email: string, password: string): Promise<void> {
    const _csrf = await this.csrfTokenOf("/login");
    const signedIn = await this.post("/login", { _csrf, email, password });
    if (signedIn.status !== 303) throw new Error(`sign-in: ${signedIn.status} ${signedIn.text}`);
  }
}

/** The test's own handle on the service's database, migrated, for fixtures and checks. */
export async function openServiceDatabase(url: string): Promise<Database> {
  const database = openPostgres(url, { poolSize: 3 });
  await database.migrate();
  return database;
}

/** Subscribes the workspace to `task.created` at `url` (plain http allowed, as outside production). */
export function subscribeToTaskCreated(db: Db, workspace: Workspace, url: string) {
  return createWebhook(
    db,
    systemAudit,
    { secretKey: TEST_SECRET_KEY, production: false, maxPerOrganization: 20 },
    { organizationId: workspace.organization.id, url, events: ["task.created"] },
  );
}

/** A new token of the workspace's first member, with `scopes`: its id and bearer value. */
export function mintMemberToken(db: Db, workspace: Workspace, scopes: Scope[]) {
  return createToken(db, systemAudit, {
    organizationId: workspace.organization.id,
    userId: userOf(workspace).id,
    scopes,
  });
}
