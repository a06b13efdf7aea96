import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { auditLog } from "../../src/db/schema/index.js";
import { recordAudit, systemAudit } from "../../src/modules/audit/service.js";
import { eventually } from "../support/eventually.js";
import { importOrganization } from "../support/fixtures.js";
import { type Pipeline, startPipeline } from "../support/pipeline.js";

let p: Pipeline;

beforeAll(async () => {
  p = await startPipeline(
    {
      WEBHOOK_RECOVERY_INTERVAL_MS: "200",
      AUDIT_LOG_RETENTION_DAYS: "30",
      AUDIT_LOG_PRUNE_BATCH_SIZE: "2",
    },
    { inProcessQueue: true },
  );
});
afterAll(() => p.close());

it("the worker's recovery loop deletes audit entries older than AUDIT_LOG_RETENTION_DAYS", async () => {
  const { organization } = await importOrganization(p.db, "retained");
  for (let index = 0; index < 5; index++) {
    await recordAudit(p.db, systemAudit, {
      organizationId: organization.id,
      action: "webhook.created",
      target: { type: "webhook", id: null, label: `hook ${index}` },
    });
  }
  await p.db
    .update(auditLog)
    .set({ createdAt: sql`now() - interval '31 days'` })
    .where(
      and(
        eq(auditLog.organizationId, organization.id),
        sql`${auditLog.targetLabel} in ('hook 0', 'hook 1', 'hook 2')`,
      ),
    );
  const labels = async () =>
    (
      await p.db
        .select({ label: auditLog.targetLabel })
        .from(auditLog)
        .where(eq(auditLog.organizationId, organization.id))
    )
      .map((row) => row.label)
      .sort();
  await eventually(async () => (await labels()).length === 2);
  expect(await labels()).toEqual(["hook 3", "hook 4"]);
});
