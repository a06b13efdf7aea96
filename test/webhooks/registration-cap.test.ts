import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidRequest } from "../../src/core/errors.js";
import { webhooks } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook, registrationSettingsOf } from "../../src/webhooks/service.js";
import { importOAuthWorkspaces, PASSWORD } from "../oauth/oauth-fixtures.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { runCli } from "../support/cli.js";
import { importFixture, type Workspace, workspaceDocument } from "../support/fixtures.js";

// WEBHOOK_MAX_PER_ORGANIZATION, kept small so the tests reach it quickly.
const MAX = 3;
const refusal =
  "This organisation already has 3 webhooks; it may register at most 3 (WEBHOOK_MAX_PER_ORGANIZATION)";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_MAX_PER_ORGANIZATION: String(MAX) });
  fixtures = await importOAuthWorkspaces(t.db);
});
afterAll(() => t.close());

const register = (workspace: Workspace, path: string) =>
  createWebhook(t.db, systemAudit, registrationSettingsOf(t.config), {
    organizationId: workspace.organization.id,
    url: `http://127.0.0.1:9/${path}`,
    events: ["task.created"],
  });

async function registeredIn(workspace: Workspace): Promise<number> {
  const [row] = await t.db
    .select({ count: count() })
    .from(webhooks)
    .where(eq(webhooks.organizationId, workspace.organization.id));
  return row?.count ?? 0;
}

describe("the webhook cap per organisation", () => {
  it("lets concurrent registrations fill the cap and no further", async () => {
    const attempts = await Promise.allSettled(
      Array.from({ length: 4 * MAX }, (_, index) => register(fixtures.devco, `race-${index}`)),
    );

    const refused = attempts.filter((attempt) => attempt.status === "rejected");
    expect(attempts.length - refused.length).toBe(MAX);
    for (const attempt of refused) {
      expect(attempt.reason).toBeInstanceOf(InvalidRequest);
      expect((attempt.reason as InvalidRequest).message).toBe(refusal);
    }
    expect(await registeredIn(fixtures.devco)).toBe(MAX);
  });

  it("counts what is registered when a lowered cap leaves an organisation above it", async () => {
    const lowered = { ...registrationSettingsOf(t.config), maxPerOrganization: MAX - 1 };

    await expect(
      createWebhook(t.db, systemAudit, lowered, {
        organizationId: fixtures.devco.organization.id,
        url: "http://127.0.0.1:9/lowered",
        events: ["task.created"],
      }),
    ).rejects.toThrow(
      `This organisation already has ${MAX} webhooks; it may register at most ${MAX - 1} (WEBHOOK_MAX_PER_ORGANIZATION)`,
    );
    expect(await registeredIn(fixtures.devco)).toBe(MAX);
  });

  it("refuses one more in the admin area with a form error naming the limit", async () => {
    for (let index = 0; index < MAX; index += 1) await register(fixtures.acme, `admin-${index}`);
    const admin = new InjectSession(t.app);
    await admin.signIn("admin@acme.example", PASSWORD);

    const _csrf = await admin.csrfTokenOf("/admin/acme/webhooks");
    const refused = await admin.post("/admin/acme/webhooks", {
      _csrf,
      url: "http://127.0.0.1:9/one-too-many",
      events: "task.created",
    });

    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain(`<p class="alert" role="alert">${refusal}</p>`);
    // The form keeps what the admin typed.
    expect(refused.body).toContain('value="http://127.0.0.1:9/one-too-many"');
    expect(await registeredIn(fixtures.acme)).toBe(MAX);
  });

  it("refuses one more in `svc webhook create` with exit code 1 and the reason", async () => {
    const third = await importFixture(t.db, workspaceDocument("third"));
    for (let index = 0; index < MAX - 1; index += 1) await register(third, `cli-${index}`);
    const env = {
      DATABASE_URL: t.config.databaseUrl ?? "",
      WEBHOOK_MAX_PER_ORGANIZATION: String(MAX),
    };
    const create = (path: string) =>
      runCli(
        ["webhook", "create", "--org", "third", "--url", `http://127.0.0.1:9/${path}`].concat([
          "--events",
          "task.created",
          "--json",
        ]),
        env,
      );

    const last = await create("last");
    expect(last.stderr).toBe("");
    expect(last.code).toBe(0);
    const refused = await create("one-too-many");

    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toBe(`${refusal}\n`);
    expect(await registeredIn(third)).toBe(MAX);
  });
});
