import { createHmac } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { changeEvents, webhookDeliveries, webhooks } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { verifyWebhookSignature } from "../../src/webhooks/verify.js";
import { api } from "../support/api.js";
import { eventually } from "../support/eventually.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";
import { type Pipeline, startPipeline } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;
let ws: Workspace;
let token: string;
let path = "/";

async function register(events: string[], hookPath: string, organizationId = ws.organization.id) {
  return createWebhook(
    p.db,
    systemAudit,
    { secretKey: p.config.secretKey, production: false, maxPerOrganization: 20 },
    { organizationId, url: receiver.url(hookPath), events },
  );
}

beforeAll(async () => {
  p = await startPipeline();
  receiver = await new Receiver().start();
  ws = await importFixture(
    p.db,
    workspaceDocument("hooks", {
      projects: [
        { slug: "rover", name: "Rover", status: "active", visibility: "org" },
        { slug: "secret", name: "Secret", status: "active", visibility: "private" },
      ],
      meetings: [
        {
          title: "Standup",
          startsAt: "2026-03-02T09:00:00Z",
          durationMinutes: 15,
          status: "done",
          locationType: "video",
          audience: "org",
          transcript: { status: "ready", text: "hello" },
        },
      ],
    }),
  );
  token = await mintToken(p.db, ws);
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});

/** The webhooks an event about `targetId` was fanned out to, once the relay has done so. */
async function deliveriesOf(targetId: string): Promise<string[]> {
  const event = await eventually(async () => {
    const [row] = await p.db.select().from(changeEvents).where(eq(changeEvents.targetId, targetId));
    return row?.fannedOutAt ? row : null;
  });
  const rows = await p.db
    .select({ webhookId: webhookDeliveries.webhookId })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.changeEventId, event.id));
  return rows.map((row) => row.webhookId);
}

let counter = 0;
beforeEach(() => {
  counter += 1;
  path = `/hook-${counter}`;
});

describe("a delivery", () => {
  it("is signed over the exact bytes with the spec's headers and payload", async () => {
    const { id: webhookId, secret } = await register(["task.created"], path);
    const created = await api(p.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Weigh it" },
    });
    expect(created.status).toBe(200);
    const [request] = await eventually(() =>
      receiver.on(path).length > 0 ? receiver.on(path) : null,
    );
    const headers = request!.headers;
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["x-service-event"]).toBe("task.created");
    expect(headers["user-agent"]).toMatch(/workspace-service/);
    const [delivery] = await p.db
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.webhookId, webhookId));
    expect(headers["x-service-delivery"]).toBe(delivery!.id);
    const timestamp = headers["x-service-timestamp"] as string;
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60);
    // Independently of the package's helper: HMAC-SHA256 of "{timestamp}.{raw_body}".
    const expected = createHmac("sha256", secret)
      .update(`${timestamp}.`)
      .update(request!.rawBody)
      .digest("hex");
    expect(headers["x-service-signature"]).toBe(`sha256=${expected}`);
    expect(
      verifyWebhookSignature({
        secret,
        rawBody: request!.rawBody,
        timestamp,
        signature: headers["x-service-signature"] as string,
      }),
    ).toEqual({ ok: true });
    const [event] = await p.db
      .select()
      .from(changeEvents)
      .where(eq(changeEvents.id, delivery!.changeEventId));
    expect(JSON.parse(request!.rawBody.toString())).toEqual({
      id: event!.id,
      type: "task.created",
      action: "created",
      target_kind: "task",
      target_id: created.body.data.id,
      actor_id: ws.users[0]!.id,
      occurred_at: event!.occurredAt.toISOString(),
      diff: {
        before: {},
        after: {
          title: "Weigh it",
          description: null,
          status: "not_started",
          priority: "normal",
          start_date: null,
          due_date: null,
          blocked_reason: null,
          assigned_to: null,
        },
      },
    });
    await eventually(async () => {
      const [row] = await p.db
        .select()
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.id, delivery!.id));
      return row?.status === "delivered";
    });
  });

  it("stores the signing secret encrypted, never in clear", async () => {
    const { id, secret } = await register(["task.created"], path);
    const [row] = await p.db.select().from(webhooks).where(eq(webhooks.id, id));
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(row!.secretCiphertext).not.toContain(secret.slice(6));
  });

  it("reaches only the webhooks subscribed to its type, of its organisation, holding a disabled one's", async () => {
    const subscribed = `${path}-yes`;
    const other = `${path}-other-type`;
    const disabled = `${path}-disabled`;
    const foreign = `${path}-foreign`;
    const { id: subscribedId } = await register(["document.created"], subscribed);
    await register(["page.created"], other);
    const { id: disabledId } = await register(["document.created"], disabled);
    await p.db.update(webhooks).set({ enabled: false }).where(eq(webhooks.id, disabledId));
    const elsewhere = await importFixture(p.db, workspaceDocument(`elsewhere-${counter}`));
    await register(["document.created"], foreign, elsewhere.organization.id);
    const res = await api(p.app, "POST", "/api/v1/documents", {
      token,
      body: { title: "Handbook", url: "https://docs.example.com/handbook" },
    });
    expect(res.status).toBe(200);
    await eventually(() => receiver.on(subscribed).length === 1);
    // Only a delivery row is ever sent: once the event is fanned out, its rows are all there is.
    // The disabled webhook's row is held, unsent, until it is enabled again.
    const deliveries = await deliveriesOf(res.body.data.id);
    expect(deliveries.sort()).toEqual([subscribedId, disabledId].sort());
    expect(receiver.on(other)).toHaveLength(0);
    expect(receiver.on(disabled)).toHaveLength(0);
    expect(receiver.on(foreign)).toHaveLength(0);
  });

  it("delivers changes in private projects to the organisation's webhooks, without the project", async () => {
    await register(["task.created"], path);
    const [project] = await p.db
      .execute(sql`select id from projects where slug = 'secret'`)
      .then((r) => (r as unknown as { rows: { id: string }[] }).rows);
    await p.db.execute(sql`insert into change_events (organization_id, type, action, target_kind, target_id, actor_id, diff)
      values (${ws.organization.id}, 'task.created', 'created', 'task', ${project!.id}, null, '{"before":{},"after":{"title":"x"}}')`);
    const [request] = await eventually(() =>
      receiver.on(path).length > 0 ? receiver.on(path) : null,
    );
    const payload = JSON.parse(request!.rawBody.toString());
    expect(payload.actor_id).toBe("system");
    expect(JSON.stringify(payload)).not.toContain("secret");
  });
});

describe("every write type", () => {
  it("produces its delivery with the documented diff", async () => {
    await register(["all"], path);
    const page = await api(p.app, "POST", "/api/v1/projects/rover/pages", {
      token,
      body: { title: "Guide", markdown: "# Hi" },
    });
    await api(p.app, "PATCH", `/api/v1/pages/${page.body.data.id}`, {
      token,
      body: { title: "Guide v2" },
    });
    const doc = await api(p.app, "POST", "/api/v1/projects/rover/documents", {
      token,
      body: { title: "Spec", url: "https://example.com/spec", category: "research" },
    });
    await api(p.app, "PATCH", `/api/v1/documents/${doc.body.data.id}`, {
      token,
      body: { description: "Read me" },
    });
    const task = await api(p.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Do it" },
    });
    await api(p.app, "PATCH", `/api/v1/tasks/${task.body.data.id}`, {
      token,
      body: { status: "done" },
    });
    const meetingId = ws.meetings![0]!.id;
    await api(p.app, "POST", `/api/v1/meetings/${meetingId}/minutes`, {
      token,
      body: { markdown: "- agreed" },
    });
    await api(p.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
      token,
      body: { notes: "Summary" },
    });

    const requests = await eventually(() =>
      receiver.on(path).length >= 8 ? receiver.on(path) : null,
    );
    const payloads = requests
      .map((request) => JSON.parse(request.rawBody.toString()))
      .sort((a, b) => a.id - b.id);
    const byType = Object.fromEntries(payloads.map((payload) => [payload.type, payload]));
    expect(Object.keys(byType).sort()).toEqual([
      "document.created",
      "document.updated",
      "meeting.minutes_updated",
      "meeting.notes_updated",
      "page.created",
      "page.updated",
      "task.created",
      "task.updated",
    ]);
    expect(byType["page.created"]).toMatchObject({
      action: "created",
      target_kind: "page",
      diff: { before: {}, after: { title: "Guide", parentId: null, text: "Hi" } },
    });
    expect(byType["page.updated"]).toMatchObject({
      action: "updated",
      diff: { before: { title: "Guide" }, after: { title: "Guide v2" } },
    });
    expect(byType["document.created"].diff.after).toEqual({
      category: "research",
      kind: "link",
      title: "Spec",
      description: null,
      url: "https://example.com/spec",
    });
    expect(byType["document.updated"].diff).toEqual({
      before: { description: null },
      after: { description: "Read me" },
    });
    expect(byType["task.updated"].diff).toEqual({
      before: { status: "not_started" },
      after: { status: "done" },
    });
    expect(byType["meeting.minutes_updated"]).toMatchObject({
      action: "minutes_updated",
      target_kind: "meeting",
      target_id: meetingId,
      diff: { before: { minutesText: "" }, after: { minutesText: "- agreed" } },
    });
    expect(byType["meeting.notes_updated"].diff.after).toEqual({
      notes: "Summary",
      notesSource: "human",
      notesStatus: "ready",
    });
  });
});

describe("POST /webhooks/ping", () => {
  it("queues a synthetic change.created delivery, even to a disabled webhook", async () => {
    const { id } = await register(["task.created"], path);
    await p.db.update(webhooks).set({ enabled: false }).where(eq(webhooks.id, id));
    const res = await api(p.app, "POST", "/api/v1/webhooks/ping", {
      token,
      body: { webhook_id: id },
    });
    expect(res.body).toEqual({ ok: true, data: { status: "queued" } });
    const [request] = await eventually(() =>
      receiver.on(path).length > 0 ? receiver.on(path) : null,
    );
    expect(request!.headers["x-service-event"]).toBe("change.created");
    expect(JSON.parse(request!.rawBody.toString())).toMatchObject({
      type: "change.created",
      target_kind: "webhook",
      target_id: id,
      actor_id: ws.users[0]!.id,
    });
  });

  it("answers 400 for an unknown webhook, another organisation's, or a bad body", async () => {
    const elsewhere = await importFixture(p.db, workspaceDocument(`ping-${counter}`));
    const { id: foreignId } = await register(["task.created"], path, elsewhere.organization.id);
    const pingsBefore = await p.db.$count(changeEvents, eq(changeEvents.type, "change.created"));
    for (const body of [
      { webhook_id: foreignId },
      { webhook_id: "0b6f4c2e-8f1a-4d55-9a1e-5c8f0d7e2a11" },
      { webhook_id: "nope" },
      {},
      { webhook_id: foreignId, extra: 1 },
    ]) {
      const res = await api(p.app, "POST", "/api/v1/webhooks/ping", { token, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
    // A ping is sent only from the delivery row it records; a refused one recorded none.
    expect(await p.db.$count(changeEvents, eq(changeEvents.type, "change.created"))).toBe(
      pingsBefore,
    );
    expect(receiver.on(path)).toHaveLength(0);
  });
});
