import {
  type AnyPgColumn,
  date,
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

export const projectVisibility = pgEnum("project_visibility", ["org", "private"]);
export const specVersionStatus = pgEnum("spec_version_status", ["draft", "published"]);
export const componentHealth = pgEnum("component_health", [
  "ok",
  "stale",
  "under-rated",
  "blocked",
]);
export const taskStatus = pgEnum("task_status", [
  "not_started",
  "in_progress",
  "blocked",
  "done",
  "cancelled",
]);
export const taskPriority = pgEnum("task_priority", ["low", "normal", "high", "critical"]);

const createdAt = () => timestamp({ withTimezone: true }).notNull().defaultNow();

export const projects = pgTable(
  "projects",
  {
    id: uuid().primaryKey().defaultRandom(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    slug: text().notNull(),
    name: text().notNull(),
    status: text().notNull(),
    visibility: projectVisibility().notNull(),
    description: text(),
    startDate: date(),
    targetDate: date(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("projects_org_slug_idx").on(t.organizationId, t.slug)],
);

export const specs = pgTable(
  "specs",
  {
    id: uuid().primaryKey().defaultRandom(),
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    slug: text().notNull(),
    name: text().notNull(),
    kind: text(),
    units: text(),
    valueType: text(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("specs_project_slug_idx").on(t.projectId, t.slug)],
);

export const specVersions = pgTable(
  "spec_versions",
  {
    id: uuid().primaryKey().defaultRandom(),
    // Insertion order: versions are created oldest first, so the highest sequence among the
    // published versions is the lineage's latest.
    sequence: integer().generatedAlwaysAsIdentity(),
    specId: uuid()
      .notNull()
      .references(() => specs.id, { onDelete: "cascade" }),
    version: text().notNull(),
    status: specVersionStatus().notNull(),
    value: jsonb().notNull(),
    publishedAt: timestamp({ withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("spec_versions_spec_version_idx").on(t.specId, t.version)],
);

export const components = pgTable(
  "components",
  {
    id: uuid().primaryKey().defaultRandom(),
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    slug: text().notNull(),
    name: text().notNull(),
    kind: text(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("components_project_slug_idx").on(t.projectId, t.slug)],
);

export const componentVersions = pgTable(
  "component_versions",
  {
    id: uuid().primaryKey().defaultRandom(),
    sequence: integer().generatedAlwaysAsIdentity(),
    componentId: uuid()
      .notNull()
      .references(() => components.id, { onDelete: "cascade" }),
    version: text().notNull(),
    status: text().notNull(),
    lifecycleStage: text().notNull(),
    healthStatus: componentHealth().notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("component_versions_component_version_idx").on(t.componentId, t.version)],
);

// A component depends on specs and on other components of its project; publishing either
// marks the dependent's latest version stale.
export const componentDependencies = pgTable(
  "component_dependencies",
  {
    id: uuid().primaryKey().defaultRandom(),
    componentId: uuid()
      .notNull()
      .references(() => components.id, { onDelete: "cascade" }),
    dependsOnSpecId: uuid().references(() => specs.id, { onDelete: "cascade" }),
    dependsOnComponentId: uuid().references(() => components.id, { onDelete: "cascade" }),
  },
  (t) => [
    index("component_dependencies_component_idx").on(t.componentId),
    index("component_dependencies_spec_idx").on(t.dependsOnSpecId),
    index("component_dependencies_on_component_idx").on(t.dependsOnComponentId),
  ],
);

export const milestones = pgTable(
  "milestones",
  {
    id: uuid().primaryKey().defaultRandom(),
    sequence: integer().generatedAlwaysAsIdentity(),
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text().notNull(),
    kind: text().notNull(),
    status: text().notNull(),
    targetDate: date().notNull(),
    actualDate: date(),
    description: text(),
    createdAt: createdAt(),
  },
  (t) => [index("milestones_project_idx").on(t.projectId, t.targetDate)],
);

export const tasks = pgTable(
  "tasks",
  {
    id: uuid().primaryKey().defaultRandom(),
    sequence: integer().generatedAlwaysAsIdentity(),
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    title: text().notNull(),
    description: text(),
    status: taskStatus().notNull().default("not_started"),
    priority: taskPriority().notNull().default("normal"),
    startDate: date(),
    dueDate: date(),
    blockedReason: text(),
    assignedTo: uuid().references(() => users.id, { onDelete: "set null" }),
    createdBy: uuid().references(() => users.id, { onDelete: "set null" }),
    updatedBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("tasks_project_idx").on(t.projectId, t.sequence),
    index("tasks_assigned_to_idx").on(t.assignedTo),
  ],
);

export type RichTextJson = { type: "doc"; content: unknown[] };

export const pages = pgTable(
  "pages",
  {
    id: uuid().primaryKey().defaultRandom(),
    sequence: integer().generatedAlwaysAsIdentity(),
    projectId: uuid()
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    parentId: uuid().references((): AnyPgColumn => pages.id, { onDelete: "cascade" }),
    title: text().notNull(),
    position: integer().notNull(),
    body: jsonb().$type<RichTextJson>().notNull(),
    /** The body as plain text, written with it: what a read returns, so reads never walk the body. */
    text: text().notNull(),
    createdBy: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    updatedAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
    updatedBy: uuid().references(() => users.id, { onDelete: "set null" }),
  },
  (t) => [
    index("pages_project_idx").on(t.projectId, t.parentId, t.position),
    index("pages_parent_idx").on(t.parentId),
  ],
);

export const pageRevisions = pgTable(
  "page_revisions",
  {
    id: uuid().primaryKey().defaultRandom(),
    sequence: integer().generatedAlwaysAsIdentity(),
    pageId: uuid()
      .notNull()
      .references(() => pages.id, { onDelete: "cascade" }),
    title: text().notNull(),
    body: jsonb().$type<RichTextJson>().notNull(),
    authorId: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
  },
  (t) => [index("page_revisions_page_idx").on(t.pageId, t.sequence)],
);
