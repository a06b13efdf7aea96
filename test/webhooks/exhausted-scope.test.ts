import { eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDeliveries } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { addUser } from "../../src/modules/users/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { InjectSession } from "../support/browser.js";
import { runCli } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  p = await startPipeline();
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await p.close();
  await receiver.stop();
});

const PASSWORD = "exhausted-scope-password";

/**
 * An organisation with two webhooks on task.created, one task delivered to both, then both
 * deliveries marked exhausted as if every daily pass had failed to reach the receiver.
 */
async function organizationWithExhaustedDeliveries(slug: string) {
  const { ws, webhook, createTask } = await workspaceWithWebhook(p, receiver, slug, `/${slug}-1`);
  const second = await createWebhook(
    p.db,
    systemAudit,
    { secretKey: p.config.secretKey, production: false, maxPerOrganization: 20 },
    {
      organizationId: ws.organization.id,
      url: receiver.url(`/${slug}-2`),
      events: ["task.created"],
    },
  );
  await createTask("Given up on");
  const webhookIds = [webhook.id, second.id];
  const rows = await eventually(async () => {
    const found = await p.db
      .select()
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.webhookId, webhookIds));
    return found.length === 2 && found.every((row) => row.status === "delivered") ? found : null;
  });
  await p.db
    .update(webhookDeliveries)
    .set({ status: "exhausted", passes: p.config.webhooks.retryPasses })
    .where(inArray(webhookDeliveries.webhookId, webhookIds));
  const deliveryOf = (webhookId: string) =>
    rows.find((row) => row.webhookId === webhookId)?.id as string;
  return {
    ws,
    first: { webhookId: webhook.id, deliveryId: deliveryOf(webhook.id), path: `/${slug}-1` },
    second: { webhookId: second.id, deliveryId: deliveryOf(second.id), path: `/${slug}-2` },
  };
}

const statusOf = async (deliveryId: string) =>
  (await p.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId)))[0]
    ?.status;

describe("svc webhook retry-failed --include-exhausted with --org and --webhook", () => {
  it("revives and retries only that webhook's, then that organisation's, never another's", async () => {
    const alpha = await organizationWithExhaustedDeliveries("alpha");
    const beta = await organizationWithExhaustedDeliveries("beta");
    const env = { DATABASE_URL: p.config.databaseUrl ?? "" };
    const sentTo = (path: string) => receiver.on(path).length;

    // Another organisation's webhook is refused, and nothing moves.
    const refused = await runCli(
      [
        "webhook",
        "retry-failed",
        "--org",
        "beta",
        "--webhook",
        alpha.first.webhookId,
        "--include-exhausted",
      ],
      env,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`No webhook with id ${alpha.first.webhookId}`);
    expect(await statusOf(alpha.first.deliveryId)).toBe("exhausted");

    const oneWebhook = await runCli(
      [
        "webhook",
        "retry-failed",
        "--org",
        "alpha",
        "--webhook",
        alpha.first.webhookId,
        "--include-exhausted",
        "--json",
      ],
      env,
    );
    expect(JSON.parse(oneWebhook.stdout)).toEqual([
      expect.objectContaining({ id: alpha.first.deliveryId, status: "delivered" }),
    ]);
    expect(await statusOf(alpha.second.deliveryId)).toBe("exhausted");

    const oneOrganization = await runCli(
      ["webhook", "retry-failed", "--org", "alpha", "--include-exhausted", "--json"],
      env,
    );
    expect(JSON.parse(oneOrganization.stdout)).toEqual([
      expect.objectContaining({ id: alpha.second.deliveryId, status: "delivered" }),
    ]);
    expect([sentTo(alpha.first.path), sentTo(alpha.second.path)]).toEqual([2, 2]);

    // Beta's exhausted deliveries were neither revived nor sent.
    expect(await statusOf(beta.first.deliveryId)).toBe("exhausted");
    expect(await statusOf(beta.second.deliveryId)).toBe("exhausted");
    expect([sentTo(beta.first.path), sentTo(beta.second.path)]).toEqual([1, 1]);
  });
});

describe("Retry all exhausted deliveries on the admin webhook page", () => {
  it("retries that webhook's exhausted deliveries only, and refuses another organisation's webhook", async () => {
    const gamma = await organizationWithExhaustedDeliveries("gamma");
    const delta = await organizationWithExhaustedDeliveries("delta");
    await addUser(p.db, systemAudit, {
      orgSlug: "gamma",
      email: "admin@gamma.example",
      name: "Gamma Admin",
      role: "admin",
      password: PASSWORD,
    });
    const admin = new InjectSession(p.app);
    await admin.signIn("admin@gamma.example", PASSWORD);
    const pagePath = `/admin/gamma/webhooks/${gamma.first.webhookId}`;
    const page = await admin.get(pagePath);
    expect(page.body).toContain(`action="${pagePath}/retry-exhausted"`);
    expect(page.body).toContain("Retry all exhausted deliveries");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;

    const res = await admin.post(`${pagePath}/retry-exhausted`, { _csrf: csrf });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(pagePath);
    const after = await admin.get(pagePath);
    expect(after.body).toContain(
      "1 delivery taken back from exhausted; 1 delivery queued for another attempt.",
    );
    await eventually(async () => (await statusOf(gamma.first.deliveryId)) === "delivered");
    expect(receiver.on(gamma.first.path)).toHaveLength(2);
    expect(await statusOf(gamma.second.deliveryId)).toBe("exhausted");

    // Delta's webhook through gamma's address: no such webhook here, and nothing moves.
    const foreign = await admin.post(
      `/admin/gamma/webhooks/${delta.first.webhookId}/retry-exhausted`,
      { _csrf: csrf },
    );
    expect(foreign.statusCode).toBe(404);
    expect(await statusOf(delta.first.deliveryId)).toBe("exhausted");
    expect(receiver.on(delta.first.path)).toHaveLength(1);
  });
});
