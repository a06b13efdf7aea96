import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookAttempts, webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { api } from "../support/api.js";
import { eventually } from "../support/eventually.js";
import { importFixture, mintToken, project, workspaceDocument } from "../support/fixtures.js";
import { type Pipeline, startPipeline } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

const TIMEOUT_MS = 8000;
const MAX_IN_FLIGHT = 3;
const PENDING_PER_WEBHOOK = 4;

let p: Pipeline;
let receiver: Receiver;

/** A pipeline per describe: few slots, so that before the fix a silent receiver fills them. */
function withPipeline(env: Record<string, string> = {}) {
  beforeAll(async () => {
    p = await startPipeline({
      WORKER_CONCURRENCY: "10",
      WEBHOOK_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      WEBHOOK_DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
      ...env,
    });
    receiver = await new Receiver().start();
  });
  afterAll(async () => {
    await receiver.stop();
    await p.close();
  });
}

/** A receiver that accepts every request and never answers; counts those open at once. */
async function silentReceiver() {
  const counts = { open: 0, most: 0, received: 0 };
  const server: Server = createServer((request, response) => {
    counts.received++;
    counts.open++;
    counts.most = Math.max(counts.most, counts.open);
    response.on("close", () => counts.open--);
    request.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/silent`;
  const stop = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { url, counts, stop };
}

/** An organisation with a webhook on each path, and a task writer that notes each commit. */
async function organizationWithWebhooks(slug: string, urls: string[]) {
  const ws = await importFixture(p.db, workspaceDocument(slug, { projects: [project("rover")] }));
  for (const url of urls) {
    await createWebhook(
      p.db,
      systemAudit,
      { secretKey: p.config.secretKey, production: false, maxPerOrganization: 20 },
      { organizationId: ws.organization.id, url, events: ["task.created"] },
    );
  }
  const token = await mintToken(p.db, ws);
  const committedAt = new Map<string, number>();
  const createTask = async (title: string) => {
    const res = await api(p.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title },
    });
    if (res.status !== 200) throw new Error(`task create: ${res.status}`);
    const id = res.body.data.id as string;
    committedAt.set(id, Date.now());
    return id;
  };
  return { createTask, committedAt };
}

/** The most requests a path had open at once, each open from its arrival for `heldMs`. */
function mostAtOnce(path: string, heldMs: number): number {
  const starts = receiver.on(path).map((request) => request.receivedAt);
  return Math.max(
    0,
    ...starts.map((start) => starts.filter((s) => s <= start && start < s + heldMs).length),
  );
}

describe("the delivery dispatcher", () => {
  withPipeline();

  it("keeps healthy webhooks prompt beside a receiver that never answers", async () => {
    const silent = await silentReceiver();
    const healthy = ["/healthy-0", "/healthy-1", "/healthy-2"];
    const { createTask, committedAt } = await organizationWithWebhooks("fair", [
      silent.url,
      ...healthy.map((path) => receiver.url(path)),
    ]);
    const taskIds: string[] = [];
    // Writes going on at a pace the loaded test box keeps up with, while the silent one hangs.
    for (let i = 0; i < 30; i++) {
      taskIds.push(await createTask(`Write ${i}`));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    await eventually(() =>
      healthy.every((path) => receiver.targetIds(path).length >= taskIds.length),
    );
    for (const path of healthy) {
      expect(new Set(receiver.targetIds(path))).toEqual(new Set(taskIds));
      const latencies = receiver
        .on(path)
        .map((request) => {
          const target = JSON.parse(request.rawBody.toString()).target_id as string;
          return request.receivedAt - (committedAt.get(target) ?? 0);
        })
        .sort((a, b) => a - b);
      // Well under the silent receiver's timeout: nobody waited behind it.
      expect(latencies.at(-1)).toBeLessThan(TIMEOUT_MS / 2);
    }
    // The silent one was tried, and held no more than its share of the slots.
    expect(silent.counts.received).toBeGreaterThan(0);
    expect(silent.counts.most).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    await silent.stop();
  }, 60_000);
});

describe("the delivery dispatcher with little room per webhook", () => {
  withPipeline({ WEBHOOK_MAX_PENDING_PER_WEBHOOK: String(PENDING_PER_WEBHOOK) });

  it("never sends a slow receiver more than its cap at once, and sends it everything", async () => {
    const heldMs = 300;
    receiver.respond("/slow", { status: 200, delayMs: heldMs });
    const { createTask } = await organizationWithWebhooks("capped", [receiver.url("/slow")]);
    const taskIds: string[] = [];
    // More than fit in its line: the rest waits in Postgres and is refilled from there.
    const writes = MAX_IN_FLIGHT + PENDING_PER_WEBHOOK * 3;
    for (let i = 0; i < writes; i++) taskIds.push(await createTask(`Slow ${i}`));

    await eventually(() => receiver.targetIds("/slow").length >= taskIds.length);
    expect(receiver.targetIds("/slow").sort()).toEqual([...taskIds].sort());
    expect(mostAtOnce("/slow", heldMs)).toBeLessThanOrEqual(MAX_IN_FLIGHT);
  }, 60_000);
});

describe("the delivery dispatcher with one slot per webhook", () => {
  withPipeline({ WEBHOOK_MAX_IN_FLIGHT: "1" });

  it("frees a slot once the receiver answered, while the attempt is still being recorded", async () => {
    const { createTask } = await organizationWithWebhooks("answered", [receiver.url("/answered")]);
    // The attempts' outcomes cannot be written while this lock is held.
    const locker = new pg.Client({ connectionString: p.config.databaseUrl });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("lock table webhook_attempts in access exclusive mode");
      const taskIds = [await createTask("First"), await createTask("Second")];
      await eventually(() => receiver.targetIds("/answered").length === 2);
      expect(receiver.targetIds("/answered")).toEqual(taskIds);
      const unrecorded = await p.db.select().from(webhookDeliveries);
      expect(unrecorded.map((delivery) => delivery.attempts)).toEqual([0, 0]);
      await locker.query("rollback");
      await eventually(async () => (await p.db.select().from(webhookAttempts)).length === 2);
    } finally {
      await locker.end();
    }
  }, 60_000);
});
