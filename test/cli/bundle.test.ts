import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhookSignature } from "../../src/webhooks/verify.js";
import { call, type ServiceProcess, startService } from "../faults/service-process.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { ROOT } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";
import { roverWithWebhook } from "../support/pipeline.js";
import { freePort } from "../support/ports.js";
import { Receiver } from "../support/receiver.js";

// `npm start` and `svc` run dist/svc.mjs, the build's bundle of the CLI and the packages it loads
// (scripts/bundle.ts), while the rest of the suite runs the sources. These run the bundle on
// every path where bundling could break a package: node-postgres, BullMQ and ioredis, undici's
// delivery, PGlite left outside the bundle, and the start script's own Node flag.

const BUNDLE = path.join(ROOT, "dist/svc.mjs");

/** The node process running the bundle under `npm start` (npm, and the shell it may use). */
function serviceProcessOf(npmPid: number): number {
  const children = (pid: number) =>
    readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .split(" ")
      .filter(Boolean)
      .map(Number);
  const pending = [npmPid];
  for (let pid = pending.shift(); pid !== undefined; pid = pending.shift()) {
    const isNode = readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "node";
    if (isNode && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("svc.mjs")) return pid;
    pending.push(...children(pid));
  }
  throw new Error("npm start runs no dist/svc.mjs process");
}

beforeAll(() => {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run npm run build first`);
});

describe("the bundle in production mode (PostgreSQL, Redis)", () => {
  let database: TestDatabase;
  let receiver: Receiver;
  let service: ServiceProcess;
  /** A token of the first test's organisation, for the tests after it on the same service. */
  let token: string;

  beforeAll(async () => {
    [database, receiver] = await Promise.all([createTestDatabase(), new Receiver().start()]);
  });
  afterAll(async () => {
    await service?.kill();
    await receiver?.stop();
    await database?.drop();
  });

  it("serves the API and delivers a signed webhook for a write", async () => {
    const db = database.database.db;
    const { ws, webhook } = await roverWithWebhook(db, TEST_SECRET_KEY, receiver, "bundle", "/in");
    token = await mintToken(db, ws);
    service = await startService(
      "start",
      {
        DATABASE_URL: database.url,
        REDIS_URL: process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
        QUEUE_PREFIX: `bundle-${randomBytes(6).toString("hex")}`,
      },
      [BUNDLE],
    );

    const created = await call(`${service.url}/api/v1/projects/rover/tasks`, {
      token,
      body: { title: "From the bundle" },
    });
    expect(created.status).toBe(200);
    const delivery = await eventually(() => receiver.on("/in")[0]);
    expect(JSON.parse(delivery.rawBody.toString())).toMatchObject({
      type: "task.created",
      target_id: created.json().data.id,
    });
    const verified = verifyWebhookSignature({
      secret: webhook.secret,
      rawBody: delivery.rawBody,
      timestamp: delivery.headers["x-service-timestamp"] as string,
      signature: delivery.headers["x-service-signature"] as string,
    });
    expect(verified).toEqual({ ok: true });
  });

  it("converts markdown in the pool's worker threads, found beside the bundle", async () => {
    const created = await call(`${service.url}/api/v1/projects/rover/pages`, {
      token,
      body: { title: "From the bundle", markdown: "# Bundled\n\n- converted off the loop" },
    });
    expect(created.status).toBe(200);
    const page = await call(`${service.url}/api/v1/pages/${created.json().data.id}`, { token });
    expect(page.json().data.text).toBe("Bundled\n\n- converted off the loop");
  });
});

describe("npm start in embedded mode", () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "svc-bundle-"));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it("starts from a fresh DATA_DIR, prints a demo token that works, and exits 0 on SIGTERM", async () => {
    const port = await freePort();
    const child = spawn("npm", ["start"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATA_DIR: dataDir,
        PORT: String(port),
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
      // A group of its own, so that a failing test leaves no service behind.
      detached: true,
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      const token = await eventually(
        () => /Demo token:\s+(svc_live_\S+)\s/.exec(output)?.[1],
        60_000,
      );
      expect(output).toContain("node --heap-growing-percent=40 dist/svc.mjs start");
      const projects = await call(`http://127.0.0.1:${port}/api/v1/projects`, { token });
      expect(projects.status).toBe(200);
      expect(projects.json().data.length).toBeGreaterThan(0);
      // The signal goes to the service, as a supervisor stopping it would send it; npm then
      // exits with the service's code.
      process.kill(serviceProcessOf(child.pid ?? 0), "SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      try {
        process.kill(-(child.pid ?? 0), "SIGKILL");
      } catch {
        // The group has exited already.
      }
    }
  });
});
