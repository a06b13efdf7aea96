import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apiTokens,
  auditLog,
  oauthClients,
  oauthGrants,
  webhookDeliveries,
  webhooks,
} from "../../src/db/schema/index.js";
import {
  listAuditEntries,
  pruneAuditLog,
  recordAudit,
  systemAudit,
} from "../../src/modules/audit/service.js";
import { writeAttempts } from "../../src/webhooks/attempt-log.js";
import { createWebhook, registrationSettingsOf } from "../../src/webhooks/service.js";
import {
  addonReturnUrl,
  importOAuthWorkspaces,
  memberIdOf,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { runCli } from "../support/cli.js";
import { importOrganization } from "../support/fixtures.js";

/*
 * Every audited action, each performed through its natural face (the admin area, the consent
 * page, the sign-in form, `svc`, the worker's attempt writer), then found both on the admin
 * Activity page and in `svc audit list --json`.
 */

type Printed = {
  id: string;
  createdAt: string;
  action: string;
  outcome: string;
  actor: { type: string; label: string };
  target: { type: string; id: string | null; label: string | null };
  sourceAddress: string | null;
};

const ADMIN = "admin@acme.example";
const HOOK_URL = "http://127.0.0.1:9/audited";
const AUTO_URL = "http://127.0.0.1:9/auto-disabled";
const REDIRECT = "https://addon.example/callback";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let admin: InjectSession;
let env: Record<string, string>;

const csrfOf = (body: string) => /name="_csrf" value="([^"]+)"/.exec(body)?.[1] as string;

async function adminPost(path: string, form: Record<string, string | string[]> = {}) {
  const _csrf = await admin.csrfTokenOf("/admin/acme/activity");
  return admin.post(path, { _csrf, ...form });
}

async function svc(...args: string[]) {
  const result = await runCli(args, env);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

async function auditList(slug: string, ...filters: string[]): Promise<Printed[]> {
  return JSON.parse(await svc("audit", "list", "--org", slug, "--json", ...filters));
}

/** Performs every audited action once, each through its face. */
async function performEveryAction() {
  // Sign-in: a wrong password first, from another address, then the admin's own sign-in.
  const stranger = new InjectSession(t.app, "198.51.100.7");
  const refused = await stranger.post("/login", {
    _csrf: await stranger.csrfTokenOf("/login"),
    email: ADMIN,
    password: "not the password",
  });
  expect(refused.statusCode).toBe(401);
  await admin.signIn(ADMIN, PASSWORD);

  // Tokens.
  const minted = await adminPost("/admin/acme/tokens", {
    name: "audit probe token",
    scopes: "projects:read",
    expires_in_days: "",
  });
  expect(minted.statusCode, minted.body).toBe(200);
  const [token] = await t.db
    .select({ id: apiTokens.id })
    .from(apiTokens)
    .where(eq(apiTokens.name, "audit probe token"));
  expect((await adminPost(`/admin/acme/tokens/${token?.id}/revoke`)).statusCode).toBe(303);

  // OAuth client of acme: created, then its secret replaced.
  const registered = await adminPost("/admin/acme/addons", {
    name: "Audit Addon",
    redirect_uris: REDIRECT,
  });
  expect(registered.statusCode, registered.body).toBe(200);
  const [client] = await t.db
    .select({ id: oauthClients.id })
    .from(oauthClients)
    .where(eq(oauthClients.name, "Audit Addon"));
  const rotated = await adminPost(`/admin/acme/addons/${client?.id}/rotate-secret`);
  expect(rotated.statusCode, rotated.body).toBe(200);

  // A grant to devco's addon, approved on the consent page, then revoked in the admin area.
  const gantt = await registerClient(t.db, fixtures.devco, [REDIRECT]);
  const params = {
    client_id: gantt.clientId,
    redirect_uri: REDIRECT,
    response_type: "code",
    scope: "projects:read",
    state: "audit",
  };
  const consent = await admin.get(`/oauth/authorize?${new URLSearchParams(params).toString()}`);
  const approved = await admin.post("/oauth/authorize", {
    ...params,
    _csrf: csrfOf(consent.body),
    member_id: memberIdOf(consent.body),
    organization_id: fixtures.acme.organization.id,
    decision: "approve",
  });
  expect(addonReturnUrl(approved).searchParams.get("code")).toMatch(/^svca_/);
  const [grant] = await t.db
    .select({ id: oauthGrants.id })
    .from(oauthGrants)
    .where(eq(oauthGrants.clientId, gantt.id));
  expect((await adminPost(`/admin/acme/connections/${grant?.id}/revoke`)).statusCode).toBe(303);

  // A webhook: created, disabled, enabled, secret replaced, a ping's delivery redelivered.
  const created = await adminPost("/admin/acme/webhooks", { url: HOOK_URL, events: "all" });
  expect(created.statusCode, created.body).toBe(200);
  const [hook] = await t.db
    .select({ id: webhooks.id })
    .from(webhooks)
    .where(eq(webhooks.url, HOOK_URL));
  const hookPath = `/admin/acme/webhooks/${hook?.id}`;
  for (const action of ["disable", "enable", "ping"]) {
    expect((await adminPost(`${hookPath}/${action}`)).statusCode).toBe(303);
  }
  expect((await adminPost(`${hookPath}/rotate-secret`)).statusCode).toBe(200);
  const [delivery] = await t.db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, hook?.id as string));
  const redelivered = await adminPost(`${hookPath}/deliveries/${delivery?.id}/redeliver`);
  expect(redelivered.statusCode).toBe(303);

  // The worker disables a webhook whose deliveries have failed for WEBHOOK_AUTO_DISABLE_DAYS.
  await disableAutomatically();

  // Memberships, by an operator with `svc`.
  const member = ["--org", "acme", "--email", "newcomer@acme.example", "--name", "New"];
  await svc("user", "add", ...member, "--role", "member");
  await svc("user", "add", ...member, "--role", "admin");
  await svc("user", "remove", "--org", "acme", "--email", "newcomer@acme.example");
}

async function disableAutomatically() {
  const { id } = await createWebhook(t.db, systemAudit, registrationSettingsOf(t.config), {
    organizationId: fixtures.acme.organization.id,
    url: AUTO_URL,
    events: ["all"],
  });
  const ping = await adminPost(`/admin/acme/webhooks/${id}/ping`);
  expect(ping.statusCode).toBe(303);
  await t.db
    .update(webhooks)
    .set({ failingSince: sql`now() - interval '6 days'` })
    .where(eq(webhooks.id, id));
  const [delivery] = await t.db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.webhookId, id));
  await writeAttempts(t.db, t.config.webhooks.autoDisableDays, [
    {
      deliveryId: delivery?.id as string,
      webhookId: id,
      attemptedAt: new Date(),
      durationMs: 3,
      statusCode: 500,
      error: null,
      responseSnippet: null,
      requestHeaders: {},
      ok: false,
      status: "failed",
      nextAttemptAt: null,
    },
  ]);
}

beforeAll(async () => {
  t = await createTestApp({ AUTH_RATE_LIMIT_MAX: "1000", PAGE_RATE_LIMIT_MAX: "100000" });
  fixtures = await importOAuthWorkspaces(t.db);
  env = { DATABASE_URL: t.config.databaseUrl ?? "" };
  admin = new InjectSession(t.app);
  await performEveryAction();
});
afterAll(() => t.close());

/** action, target label, actor label, outcome, source address ("request": the request's). */
const expected: [string, string, string, string, "request" | null][] = [
  ["member.signed_in", ADMIN, ADMIN, "failure", "request"],
  ["member.signed_in", ADMIN, ADMIN, "success", "request"],
  ["token.minted", "audit probe token", ADMIN, "success", "request"],
  ["token.revoked", "audit probe token", ADMIN, "success", "request"],
  ["oauth_client.created", "Audit Addon", ADMIN, "success", "request"],
  ["oauth_client.secret_replaced", "Audit Addon", ADMIN, "success", "request"],
  ["grant.approved", "Gantt Addon", ADMIN, "success", "request"],
  ["grant.revoked", "Gantt Addon", ADMIN, "success", "request"],
  ["webhook.created", HOOK_URL, ADMIN, "success", "request"],
  ["webhook.disabled", HOOK_URL, ADMIN, "success", "request"],
  ["webhook.enabled", HOOK_URL, ADMIN, "success", "request"],
  ["webhook.secret_replaced", HOOK_URL, ADMIN, "success", "request"],
  ["delivery.redelivered", HOOK_URL, ADMIN, "success", "request"],
  ["webhook.disabled", AUTO_URL, "system", "success", null],
  ["member.added", "newcomer@acme.example", "svc", "success", null],
  ["member.role_changed", "newcomer@acme.example", "svc", "success", null],
  ["member.removed", "newcomer@acme.example", "svc", "success", null],
];

describe("the audit log", () => {
  let printed: Printed[];
  beforeAll(async () => {
    printed = await auditList("acme");
  });

  it.each(expected)(
    "records %s of %s by %s (%s) in svc audit list --json",
    (action, target, actor, outcome, source) => {
      const entry = printed.find(
        (candidate) =>
          candidate.action === action &&
          candidate.target.label === target &&
          candidate.actor.label === actor &&
          candidate.outcome === outcome,
      );
      expect(entry, JSON.stringify(printed, null, 2)).toBeDefined();
      if (source === null) expect(entry?.sourceAddress).toBeNull();
      else expect(entry?.sourceAddress).toMatch(/^(127\.0\.0\.1|198\.51\.100\.7)$/);
    },
  );

  it.each(expected)(
    "shows %s of %s by %s (%s) on the Activity page",
    async (action, target, actor, outcome) => {
      const page = await admin.get(`/admin/acme/activity?action=${action}`);
      expect(page.statusCode).toBe(200);
      const rows = page.body.split("<tr>").slice(2);
      const row = rows.find(
        (candidate) =>
          candidate.includes(`<code>${action}</code>`) &&
          candidate.includes(target) &&
          candidate.includes(`data-label="Actor">${actor}<`) &&
          candidate.includes(`>${outcome}</span>`),
      );
      expect(row, page.body).toBeDefined();
      expect(rows.every((candidate) => candidate.includes(`<code>${action}</code>`))).toBe(true);
    },
  );

  it("lists newest first and filters by actor, action and time", async () => {
    const times = printed.map((entry) => entry.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const byOperator = await admin.get("/admin/acme/activity?actor=svc");
    const rows = byOperator.body.split("<tr>").slice(2);
    expect(rows).toHaveLength(3);
    expect(rows.every((row) => row.includes(">member."))).toBe(true);
    const oldest = printed.at(-1)?.createdAt as string;
    const minted = await auditList("acme", "--action", "token.minted", "--since", oldest);
    expect(minted.map((entry) => entry.target.label)).toEqual(["audit probe token"]);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await auditList("acme", "--since", future)).toEqual([]);
  });

  it("refuses an unknown action on the Activity page", async () => {
    const page = await admin.get("/admin/acme/activity?action=nope");
    expect(page.statusCode).toBe(400);
  });

  it("records a failed sign-in to an unknown email nowhere", async () => {
    const session = new InjectSession(t.app, "203.0.113.9");
    const refused = await session.post("/login", {
      _csrf: await session.csrfTokenOf("/login"),
      email: "nobody@acme.example",
      password: "whatever it is",
    });
    expect(refused.statusCode).toBe(401);
    const [row] = await t.db
      .select({ count: sql<number>`count(*)::int` })
      .from(auditLog)
      .where(eq(auditLog.sourceAddress, "203.0.113.9"));
    expect(row?.count).toBe(0);
  });

  it("keeps each organisation's entries to itself", async () => {
    const devco = await auditList("devco");
    expect(devco.map((entry) => [entry.action, entry.target.label])).toEqual([
      ["oauth_client.created", "Gantt Addon"],
    ]);
    expect(
      printed.some(
        (entry) => entry.action === "oauth_client.created" && entry.target.label === "Gantt Addon",
      ),
    ).toBe(false);
    const page = await admin.get("/admin/devco/activity");
    expect(page.statusCode).toBe(403);
  });
});

describe("paging and retention", () => {
  it("pages newest first without skipping or repeating entries made in the same instant", async () => {
    const org = await importOrganization(t.db, "pager");
    await t.db.transaction(async (tx) => {
      for (let index = 0; index < 60; index++) {
        await recordAudit(tx, systemAudit, {
          organizationId: org.organization.id,
          action: "token.minted",
          target: { type: "token", id: null, label: `token ${index}` },
        });
      }
    });
    const seen: string[] = [];
    let before = null;
    do {
      const page = await listAuditEntries(t.db, {
        organizationId: org.organization.id,
        before,
        limit: 50,
      });
      seen.push(...page.entries.map((entry) => entry.id));
      before = page.older;
    } while (before !== null);
    expect(seen).toHaveLength(60);
    expect(new Set(seen).size).toBe(60);
  });

  it("deletes entries older than the retention in bounded batches, and only those", async () => {
    const org = await importOrganization(t.db, "retained");
    for (let index = 0; index < 5; index++) {
      await recordAudit(t.db, systemAudit, {
        organizationId: org.organization.id,
        action: "webhook.created",
        target: { type: "webhook", id: null, label: `hook ${index}` },
      });
    }
    const old = ["hook 0", "hook 1", "hook 2"];
    for (const label of old) {
      await t.db
        .update(auditLog)
        .set({ createdAt: sql`now() - interval '366 days'` })
        .where(
          and(eq(auditLog.organizationId, org.organization.id), eq(auditLog.targetLabel, label)),
        );
    }
    expect(await pruneAuditLog(t.db, { retentionDays: 365, pruneBatchSize: 2 })).toBe(3);
    const left = await listAuditEntries(t.db, { organizationId: org.organization.id, limit: 10 });
    expect(left.entries.map((entry) => entry.target.label).sort()).toEqual(["hook 3", "hook 4"]);
  });
});
