import { readFileSync } from "node:fs";
import { count, eq } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  changeEvents,
  documents,
  meetings,
  pageRevisions,
  pages,
  tasks,
  transcripts,
  webhookDeliveries,
} from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import {
  describeWriteEffect,
  type WriteOperation,
  writeEffects,
} from "../../src/modules/change-events/write-effects.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { eventRowsFor } from "../support/change-events.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";

// The one table of what each write records (write-effects.ts) against the descriptions the
// OpenAPI document and docs/api.md give, and against what the service really does.

let t: TestApp;
let acme: Workspace;
let token: string;
let webhookId: string;

type Call = { method: "POST" | "PATCH"; url: string; body: unknown };

type Scenario =
  /** A creation: the call, and how to find the id of what it made in its answer. */
  | { kind: "creation"; call: () => Call; createdId: (data: any) => string }
  /** An update of one target: a change of `fields`, and calls that change nothing. */
  | {
      kind: "update";
      target: () => string;
      row: (id: string) => Promise<unknown>;
      stamp: (row: any) => Date | null;
      unchanged: (id: string) => Call[];
      change: (id: string) => Call;
      fields: string[];
    }
  | { kind: "ping"; call: () => Call };

const guide = () => acme.projects[0]!.pages.find((page) => page.title === "Guide")!.id;
const handbook = () => acme.documents.find((document) => document.title === "Handbook")!.id;
const weigh = () => acme.projects[0]!.tasks[0]!.id;
const minuted = () => acme.meetings.find((meeting) => meeting.title === "Minuted")!.id;
const noted = () => acme.meetings.find((meeting) => meeting.title === "Noted")!.id;

async function rowOf(table: PgTable & { id: any }, id: string) {
  const [row] = await t.db.select().from(table).where(eq(table.id, id));
  return row;
}

const scenarios: Record<WriteOperation, Scenario> = {
  createPage: {
    kind: "creation",
    call: () => ({ method: "POST", url: "/api/v1/projects/rover/pages", body: { title: "New" } }),
    createdId: (data) => data.id,
  },
  updatePage: {
    kind: "update",
    target: guide,
    row: async (id) => ({
      page: await rowOf(pages, id),
      revisions: await t.db.$count(pageRevisions, eq(pageRevisions.pageId, id)),
    }),
    stamp: (row) => row.page.updatedAt,
    unchanged: (id) => [
      { method: "PATCH", url: `/api/v1/pages/${id}`, body: {} },
      { method: "PATCH", url: `/api/v1/pages/${id}`, body: { title: "Guide" } },
      {
        method: "PATCH",
        url: `/api/v1/pages/${id}`,
        body: { title: "Guide", markdown: "# Guide\n\nStart here." },
      },
      { method: "PATCH", url: `/api/v1/pages/${id}`, body: { markdown: "", mode: "append" } },
    ],
    change: (id) => ({
      method: "PATCH",
      url: `/api/v1/pages/${id}`,
      body: { title: "Guide", markdown: "Start here, now." },
    }),
    fields: ["text"],
  },
  createTeamDocumentLink: {
    kind: "creation",
    call: () => ({
      method: "POST",
      url: "/api/v1/documents",
      body: { title: "Spec", url: "https://example.com/spec" },
    }),
    createdId: (data) => data.id,
  },
  createProjectDocumentLink: {
    kind: "creation",
    call: () => ({
      method: "POST",
      url: "/api/v1/projects/rover/documents",
      body: { title: "Spec", url: "https://example.com/spec" },
    }),
    createdId: (data) => data.id,
  },
  updateDocument: {
    kind: "update",
    target: handbook,
    row: (id) => rowOf(documents, id),
    stamp: (row) => row.updatedAt,
    unchanged: (id) => [
      { method: "PATCH", url: `/api/v1/documents/${id}`, body: {} },
      { method: "PATCH", url: `/api/v1/documents/${id}`, body: { title: "Handbook" } },
      {
        method: "PATCH",
        url: `/api/v1/documents/${id}`,
        body: { title: "Handbook", description: null },
      },
    ],
    change: (id) => ({
      method: "PATCH",
      url: `/api/v1/documents/${id}`,
      body: { title: "Handbook", description: "Read first" },
    }),
    fields: ["description"],
  },
  createTask: {
    kind: "creation",
    call: () => ({ method: "POST", url: "/api/v1/projects/rover/tasks", body: { title: "Do" } }),
    createdId: (data) => data.id,
  },
  updateTask: {
    kind: "update",
    target: weigh,
    row: (id) => rowOf(tasks, id),
    stamp: (row) => row.updatedAt,
    unchanged: (id) => [
      { method: "PATCH", url: `/api/v1/tasks/${id}`, body: {} },
      {
        method: "PATCH",
        url: `/api/v1/tasks/${id}`,
        body: { title: "Weigh", status: "in_progress", due_date: null, assigned_to: null },
      },
    ],
    change: (id) => ({
      method: "PATCH",
      url: `/api/v1/tasks/${id}`,
      body: { title: "Weigh", status: "done", priority: "normal" },
    }),
    fields: ["status"],
  },
  writeMeetingMinutes: {
    kind: "update",
    target: minuted,
    row: (id) => rowOf(meetings, id),
    stamp: (row) => row.minutesUpdatedAt,
    unchanged: (id) => [
      { method: "POST", url: `/api/v1/meetings/${id}/minutes`, body: { markdown: "Agreed" } },
      {
        method: "POST",
        url: `/api/v1/meetings/${id}/minutes`,
        body: { markdown: "", mode: "append" },
      },
    ],
    change: (id) => ({
      method: "POST",
      url: `/api/v1/meetings/${id}/minutes`,
      body: { markdown: "Signed", mode: "append" },
    }),
    fields: ["minutesText"],
  },
  writeMeetingNotes: {
    kind: "update",
    target: noted,
    row: async (id) => {
      const [row] = await t.db.select().from(transcripts).where(eq(transcripts.meetingId, id));
      return row;
    },
    stamp: () => null,
    unchanged: (id) => [
      { method: "POST", url: `/api/v1/meetings/${id}/notes`, body: { notes: "Ours" } },
    ],
    change: (id) => ({
      method: "POST",
      url: `/api/v1/meetings/${id}/notes`,
      body: { notes: "Ours, edited" },
    }),
    fields: ["notes"],
  },
  pingWebhook: {
    kind: "ping",
    call: () => ({ method: "POST", url: "/api/v1/webhooks/ping", body: { webhook_id: webhookId } }),
  },
};

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    documents: [
      { category: "documentation", kind: "link", title: "Handbook", url: "https://h.example" },
    ],
    meetings: [
      {
        title: "Minuted",
        startsAt: "2026-03-02T09:00:00Z",
        durationMinutes: 30,
        status: "done",
        locationType: "video",
        audience: "org",
        minutesMarkdown: "Agreed",
      },
      {
        title: "Noted",
        startsAt: "2026-03-03T09:00:00Z",
        durationMinutes: 30,
        status: "done",
        locationType: "video",
        audience: "org",
        transcript: {
          status: "ready",
          text: "words",
          notes: "Ours",
          notesSource: "human",
          notesStatus: "ready",
        },
      },
    ],
    projects: [
      project("rover", {
        pages: [{ title: "Guide", markdown: "# Guide\n\nStart here." }],
        tasks: [{ title: "Weigh", status: "in_progress" }],
      }),
    ],
  });
  token = await mintToken(t.db, acme);
  const settings = { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 };
  const webhook = (url: string) =>
    createWebhook(t.db, systemAudit, settings, {
      organizationId: acme.organization.id,
      url,
      events: ["all"],
    });
  webhookId = (await webhook("http://127.0.0.1:9/pinged")).id;
  await webhook("http://127.0.0.1:9/bystander");
});

afterAll(async () => {
  await t?.close();
});

const send = (call: Call) => api(t.app, call.method, call.url, { token, body: call.body });
const eventCount = async () => (await t.db.select({ n: count() }).from(changeEvents))[0]!.n;
const operations = Object.keys(writeEffects) as WriteOperation[];

describe("what each write records", () => {
  it.each(operations)("%s does what its table entry says", async (operation) => {
    const effect = writeEffects[operation];
    const scenario = scenarios[operation];
    if (scenario.kind === "creation" || scenario.kind === "ping") {
      const before = await eventCount();
      const res = await send(scenario.call());
      expect(res.status).toBe(200);
      expect(await eventCount()).toBe(before + 1);
      const targetId = scenario.kind === "ping" ? webhookId : scenario.createdId(res.body.data);
      const [event] = (await eventRowsFor(t.db, targetId)).slice(-1);
      expect(event?.type).toBe(effect.event);
      if (scenario.kind === "ping") {
        // Addressed to the one webhook: never fanned out to the others.
        expect(event?.fannedOutAt).not.toBeNull();
        const deliveries = await t.db
          .select({ webhookId: webhookDeliveries.webhookId })
          .from(webhookDeliveries)
          .where(eq(webhookDeliveries.changeEventId, event!.id));
        expect(deliveries).toEqual([{ webhookId }]);
      }
      return;
    }
    const id = scenario.target();
    const stored = await scenario.row(id);
    const events = await eventCount();
    for (const call of scenario.unchanged(id)) {
      const res = await send(call);
      expect(res.status, JSON.stringify(call.body)).toBe(200);
      expect(await scenario.row(id), JSON.stringify(call.body)).toEqual(stored);
    }
    expect(await eventCount()).toBe(events);

    const res = await send(scenario.change(id));
    expect(res.status).toBe(200);
    expect(await eventCount()).toBe(events + 1);
    const [event] = (await eventRowsFor(t.db, id)).slice(-1);
    expect(event?.type).toBe(effect.event);
    const diff = event?.diff as { before: object; after: object };
    expect(Object.keys(diff.after).sort()).toEqual([...scenario.fields].sort());
    expect(Object.keys(diff.before).sort()).toEqual([...scenario.fields].sort());
    const changed: any = await scenario.row(id);
    const [was, now] = [scenario.stamp(stored), scenario.stamp(changed)];
    if (effect.kind === "update" && effect.stamp !== null) {
      expect(now!.getTime()).toBeGreaterThan(was?.getTime() ?? 0);
    }
    if (effect.kind === "update" && effect.revision) {
      expect(changed.revisions).toBe((stored as { revisions: number }).revisions + 1);
    }
  });
});

describe("the descriptions of what each write records", () => {
  const normalise = (text: string) => text.replace(/\s+/g, " ");

  it("stand in the OpenAPI description of every write operation, and only there", async () => {
    const document = (await api(t.app, "GET", "/api/v1/openapi.json")).body;
    const writes: string[] = [];
    for (const item of Object.values(document.paths) as Record<string, any>[]) {
      for (const [method, operation] of Object.entries(item)) {
        if (method !== "post" && method !== "patch") continue;
        writes.push(operation.operationId);
        const sentence = describeWriteEffect(operation.operationId as WriteOperation);
        expect(operation.description, operation.operationId).toContain(sentence);
        // What a write records is said by the table's sentence alone, never beside it.
        const rest = operation.description.replace(sentence, "");
        expect(rest, operation.operationId).not.toMatch(/\b(records?|events?|revisions?)\b/i);
      }
    }
    expect(writes.sort()).toEqual([...operations].sort());
  });

  it("stand in the API docs' change-event section", () => {
    const doc = normalise(readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8"));
    const section = doc.slice(doc.indexOf("## Change events"));
    for (const operation of operations) {
      expect(section, operation).toContain(normalise(describeWriteEffect(operation)));
    }
  });
});
