import { afterAll, beforeAll, expect, it } from "vitest";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createPingDelivery, createWebhook, listDeliveries } from "../../src/webhooks/service.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { importFixture, type Workspace, workspaceDocument } from "../support/fixtures.js";
import { closedPort, startConnectionCounter } from "../support/ports.js";

let database: TestDatabase;
let ws: Workspace;

beforeAll(async () => {
  database = await createTestDatabase();
  ws = await importFixture(database.database.db, workspaceDocument("scanner"));
});
afterAll(() => database.drop());

/** A webhook registered while loopback was allowed (outside production), with a ping waiting. */
async function pingTo(url: string) {
  const { db } = database.database;
  const webhook = await createWebhook(
    db,
    systemAudit,
    { secretKey: TEST_SECRET_KEY, production: false, maxPerOrganization: 20 },
    { organizationId: ws.organization.id, url, events: ["task.created"] },
  );
  const { deliveryId } = await createPingDelivery(db, {
    organizationId: ws.organization.id,
    webhookId: webhook.id,
    actorId: null,
  });
  return { webhookId: webhook.id, deliveryId };
}

it("logs the same refusal for an open and a closed port on a forbidden address, connecting to neither", async () => {
  const listening = await startConnectionCounter("127.0.0.1");
  try {
    const open = await pingTo(`http://127.0.0.1:${listening.port}/hook`);
    const shut = await pingTo(`http://127.0.0.1:${await closedPort("127.0.0.1")}/hook`);
    // The same deployment in production, where loopback is forbidden, sends them.
    const redeliver = (deliveryId: string) =>
      runCli(["webhook", "redeliver", "--delivery", deliveryId, "--json"], {
        NODE_ENV: "production",
        DATABASE_URL: database.url,
      });

    const [openRun, shutRun] = [await redeliver(open.deliveryId), await redeliver(shut.deliveryId)];

    const refusal = "connection to forbidden address 127.0.0.1 refused";
    // The CLI logs the failed attempt (at warn, on stderr) the same way for both.
    for (const [run, target] of [
      [openRun, open],
      [shutRun, shut],
    ] as const) {
      expect(
        run.stderr
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line)),
      ).toEqual([
        expect.objectContaining({
          level: 40,
          msg: "webhook delivery attempt failed",
          webhookId: target.webhookId,
          deliveryId: target.deliveryId,
          outcome: "refused_address",
          statusCode: null,
          error: refusal,
        }),
      ]);
    }
    expect(JSON.parse(openRun.stdout)).toMatchObject({ statusCode: null, error: refusal });
    expect(JSON.parse(shutRun.stdout)).toMatchObject({ statusCode: null, error: refusal });
    const logged = async (webhookId: string) =>
      (await listDeliveries(database.database.db, { webhookId })).map((row) => row.responses);
    expect(await logged(open.webhookId)).toEqual([[refusal]]);
    expect(await logged(shut.webhookId)).toEqual([[refusal]]);
    expect(listening.connections()).toBe(0);
  } finally {
    await listening.close();
  }
});
