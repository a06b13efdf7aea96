import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../src/db/client.js";
import { runRetryPass } from "../../src/webhooks/retry-pass.js";
import { encryptSecret } from "../../src/webhooks/secret-box.js";
import { verifyWebhookSignature } from "../../src/webhooks/verify.js";
import { runCli } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

/**
 * The relay polls once an hour here, so a delivery that arrives at all was woken by the commit's
 * notification (or, after a lost connection, by hearing the channel again).
 */
const ONE_HOUR_MS = "3600000";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(() => receiver.stop());

function arrivedFor(path: string, taskId: string) {
  return receiver
    .on(path)
    .filter((request) => JSON.parse(request.rawBody.toString()).target_id === taskId);
}

describe.each([
  ["BullMQ", false],
  ["the in-process queue", true],
])("the relay, with %s", (_name, inProcessQueue) => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await startPipeline({ WEBHOOK_RELAY_INTERVAL_MS: ONE_HOUR_MS }, { inProcessQueue });
  });
  afterAll(() => p.close());

  it("is woken by the commit, not by its poll", async () => {
    const path = `/wake-${inProcessQueue}`;
    const { createTask } = await workspaceWithWebhook(p, receiver, `wake-${inProcessQueue}`, path);
    const taskId = await createTask("Wake up");
    await eventually(() => arrivedFor(path, taskId).length > 0);
  });

  it("fans out what committed while its notifications were not heard", async () => {
    const path = `/deaf-${inProcessQueue}`;
    const { createTask } = await workspaceWithWebhook(p, receiver, `deaf-${inProcessQueue}`, path);
    // Cut the listening connection for real; it reconnects by itself.
    const listeners = await p.db.execute(sql`
      select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and query ilike 'listen%' and pid <> pg_backend_pid()`);
    expect(rowsOf(listeners).length).toBeGreaterThan(0);
    const taskIds = [await createTask("While deaf 1"), await createTask("While deaf 2")];
    for (const taskId of taskIds) {
      await eventually(() => arrivedFor(path, taskId).length > 0);
    }
  });

  it("signs with a replaced secret from the next attempt on", async () => {
    const path = `/secret-${inProcessQueue}`;
    const { webhook, createTask } = await workspaceWithWebhook(
      p,
      receiver,
      `secret-${inProcessQueue}`,
      path,
    );
    const verified = (taskId: string, secret: string) => {
      const [request] = arrivedFor(path, taskId);
      return verifyWebhookSignature({
        secret,
        rawBody: request!.rawBody,
        timestamp: request!.headers["x-service-timestamp"] as string,
        signature: request!.headers["x-service-signature"] as string,
      }).ok;
    };
    const first = await createTask("Old secret");
    await eventually(() => arrivedFor(path, first).length > 0);
    expect(verified(first, webhook.secret)).toBe(true);

    const replaced = "whsec_replaced-secret-for-the-test";
    await p.db.execute(sql`
      update webhooks set secret_ciphertext = ${encryptSecret(p.config.secretKey, replaced)}
      where id = ${webhook.id}`);
    const second = await createTask("New secret");
    await eventually(() => arrivedFor(path, second).length > 0);
    expect(verified(second, replaced)).toBe(true);
    expect(verified(second, webhook.secret)).toBe(false);
  });
});

describe("the daily pass over more failed deliveries than one batch", () => {
  // Small batches prove the batching with a small fixture; the default batch is 500.
  const BATCH = { WEBHOOK_RETRY_PASS_BATCH_SIZE: "50" };
  const FAILED = 120;
  let p: Pipeline;
  beforeAll(async () => {
    // One webhook takes every delivery here: its share of the slots is all of them.
    p = await startPipeline({ WEBHOOK_MAX_IN_FLIGHT: "50", ...BATCH });
  });
  afterAll(() => p.close());

  /** FAILED deliveries recorded as failed once, as if the receiver had been down. */
  async function failedDeliveries(
    slug: string,
    path: string,
  ): Promise<{ ids: string[]; organizationId: string }> {
    const { ws, createTask } = await workspaceWithWebhook(p, receiver, slug, path);
    const taskId = await createTask("Seed");
    await eventually(() => arrivedFor(path, taskId).length > 0);
    const inserted = await p.db.execute(sql`
      with events as (
        insert into change_events
          (organization_id, type, action, target_kind, target_id, actor_id, diff, fanned_out_at)
        select organization_id, type, action, target_kind, target_id, actor_id, diff, now()
        from change_events, generate_series(1, ${FAILED})
        where organization_id = ${ws.organization.id} and type = 'task.created'
        returning id
      )
      insert into webhook_deliveries (webhook_id, change_event_id, status, attempts, last_attempt_at)
      select w.id, e.id, 'failed', 1, now()
      from webhooks w, events e
      where w.organization_id = ${ws.organization.id}
      returning id`);
    return {
      ids: rowsOf<{ id: string }>(inserted).map((row) => row.id),
      organizationId: ws.organization.id,
    };
  }

  function sentOnce(path: string, ids: string[]) {
    const sent = receiver.on(path).map((request) => request.headers["x-service-delivery"]);
    const expected = new Set(ids);
    const ofThese = sent.filter((id) => expected.has(String(id)));
    return { distinct: new Set(ofThese).size, total: ofThese.length };
  }

  it("claims them in bounded batches, each delivery once", async () => {
    const { ids, organizationId } = await failedDeliveries("claim-batches", "/claim-batches");
    const batches: string[][] = [];
    const claimed = await runRetryPass(
      p.db,
      p.config.webhooks,
      async (batch) => {
        batches.push(batch.map((delivery) => delivery.id));
      },
      { organizationId },
    );
    expect(claimed).toBe(FAILED);
    expect(batches.map((batch) => batch.length)).toEqual([50, 50, 20]);
    expect(new Set(batches.flat())).toEqual(new Set(ids));
  });

  it("re-sends every one exactly once from the worker's queued pass", async () => {
    const path = "/pass-batches";
    const { ids } = await failedDeliveries("pass-batches", path);
    await p.queue.enqueue("runRetryPass", {});
    await eventually(() => sentOnce(path, ids).distinct === FAILED, 60_000);
    expect(sentOnce(path, ids)).toEqual({ distinct: FAILED, total: FAILED });
    // The receiver answers before the worker records the attempt: wait for the records.
    const passes = await eventually(async () => {
      const rows = rowsOf<{ passes: number; status: string; count: number }>(
        await p.db.execute(sql`
          select passes, status, count(*)::int as count from webhook_deliveries
          where id = any(${`{${ids.join(",")}}`}::uuid[]) group by passes, status`),
      );
      return rows.some((row) => row.status !== "delivered") ? null : rows;
    });
    expect(passes).toEqual([{ passes: 1, status: "delivered", count: FAILED }]);
  }, 90_000);

  it("re-sends every one exactly once from svc webhook retry-failed", async () => {
    const path = "/cli-batches";
    const { ids } = await failedDeliveries("cli-batches", path);
    const res = await runCli(["webhook", "retry-failed", "--json"], {
      DATABASE_URL: p.config.databaseUrl ?? "",
      ...BATCH,
    });
    expect(res.code, res.stderr).toBe(0);
    // The pass is not scoped: it may also take deliveries the other tests left failed.
    const expected = new Set(ids);
    const printed = (JSON.parse(res.stdout) as { id: string; status: string }[]).filter((entry) =>
      expected.has(entry.id),
    );
    expect(new Set(printed.map((entry) => entry.id))).toEqual(expected);
    expect(printed.every((entry) => entry.status === "delivered")).toBe(true);
    expect(sentOnce(path, ids)).toEqual({ distinct: FAILED, total: FAILED });
  }, 90_000);
});
