import { sql } from "drizzle-orm";
import {
  bigint,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { organizations, users } from "./organizations.js";
import { projects, type RichTextJson } from "./projects.js";

export const documentCategory = pgEnum("document_category", ["documentation", "research"]);
export const documentKind = pgEnum("document_kind", ["file", "link"]);
export const meetingAudience = pgEnum("meeting_audience", ["org", "restricted"]);

export const documents = pgTable(
  "documents",
  {
    id: uuid().primaryKey().defaultRandom(),
    sequence: integer().generatedAlwaysAsIdentity(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    // Null for the team-level library.
    projectId: uuid().references(() => projects.id, { onDelete: "cascade" }),
    category: documentCategory().notNull(),
    kind: documentKind().notNull(),
    title: text().notNull(),
    description: text(),
    url: text(),
    filename: text(),
    byteSize: bigint({ mode: "number" }),
    contentType: text(),
    uploadedBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("documents_org_project_idx").on(t.organizationId, t.projectId, t.category),
    index("documents_project_idx").on(t.projectId),
  ],
);

export const meetings = pgTable(
  "meetings",
  {
    id: uuid().primaryKey().defaultRandom(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: uuid().references(() => projects.id, { onDelete: "cascade" }),
    title: text(),
    startsAt: timestamp({ withTimezone: true }).notNull(),
    durationMinutes: integer().notNull(),
    status: text().notNull(),
    locationType: text().notNull(),
    location: text(),
    description: text(),
    audience: meetingAudience().notNull(),
    minutes: jsonb().$type<RichTextJson>(),
    /** The minutes as plain text, written with them ("" when none): what a read returns. */
    minutesText: text().notNull().default(""),
    minutesUpdatedAt: timestamp({ withTimezone: true }),
    minutesUpdatedBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("meetings_org_starts_idx").on(t.organizationId, t.startsAt),
    index("meetings_project_starts_idx").on(t.projectId, t.startsAt),
  ],
);

export const transcripts = pgTable(
  "transcripts",
  {
    id: uuid().primaryKey().defaultRandom(),
    meetingId: uuid()
      .notNull()
      .references(() => meetings.id, { onDelete: "cascade" }),
    status: text().notNull(),
    text: text().notNull(),
    notes: text(),
    notesStatus: text().notNull(),
    // "human" once a member wrote the notes; transcript jobs never overwrite those.
    notesSource: text(),
    notesUpdatedBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("transcripts_meeting_idx").on(t.meetingId)],
);

export const changeEvents = pgTable(
  "change_events",
  {
    // The integer id is the webhook payload `id`.
    id: integer().primaryKey().generatedAlwaysAsIdentity(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    type: text().notNull(),
    action: text().notNull(),
    targetKind: text().notNull(),
    targetId: text().notNull(),
    actorId: uuid().references(() => users.id, { onDelete: "set null" }),
    occurredAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    diff: jsonb()
      .$type<{ before: Record<string, unknown>; after: Record<string, unknown> }>()
      .notNull(),
    // Set by the webhook relay once the event has its delivery rows.
    fannedOutAt: timestamp({ withTimezone: true }),
    // The W3C traceparent of the request that recorded it (tracing on), for its deliveries' links.
    traceContext: text(),
  },
  (t) => [
    index("change_events_org_idx").on(t.organizationId, t.id),
    index("change_events_pending_fanout_idx").on(t.id).where(sql`${t.fannedOutAt} is null`),
  ],
);
