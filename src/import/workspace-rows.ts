import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  componentDependencies,
  components,
  componentVersions,
  documents,
  meetings,
  milestones,
  pageRevisions,
  pages,
  projects,
  specs,
  specVersions,
  tasks,
  transcripts,
} from "../db/schema/index.js";
import { markdownToRichText } from "../richtext/markdown.js";
import { richTextToPlainText } from "../richtext/plain-text.js";
import { emptyRichText } from "../richtext/types.js";
import { parseDependencyReference } from "./references.js";
import type {
  ComponentInput,
  ComponentVersionInput,
  DocumentInput,
  MeetingInput,
  MilestoneInput,
  PageInput,
  ProjectInput,
  SpecInput,
  SpecVersionInput,
  TaskInput,
  TranscriptInput,
  WorkspaceDocument,
} from "./schema.js";

// Turns a validated document into table rows with ids chosen here, so that rows can be
// inserted in bulk and the echoed document can carry the ids without reading them back.

type Identified<T> = { id: string } & T;
type ImportedSpec = Identified<Omit<SpecInput, "versions">> & {
  versions: Identified<SpecVersionInput>[];
};
type ImportedComponent = Identified<Omit<ComponentInput, "versions">> & {
  versions: Identified<ComponentVersionInput>[];
};
type ImportedPage = Identified<Omit<PageInput, "children">> & { children: ImportedPage[] };
export type ImportedDocument = Identified<DocumentInput>;
export type ImportedMeeting = Identified<Omit<MeetingInput, "transcript">> & {
  transcript?: Identified<TranscriptInput>;
};
export type ImportedProject = Identified<
  Omit<
    ProjectInput,
    "specs" | "components" | "milestones" | "tasks" | "pages" | "documents" | "meetings"
  >
> & {
  specs: ImportedSpec[];
  components: ImportedComponent[];
  milestones: Identified<MilestoneInput>[];
  tasks: Identified<TaskInput>[];
  pages: ImportedPage[];
  documents: ImportedDocument[];
  meetings: ImportedMeeting[];
};

/** The tables a workspace fills, in reference order: every row's parent is in an earlier one. */
export const workspaceTables = {
  projects,
  specs,
  specVersions,
  components,
  componentVersions,
  componentDependencies,
  milestones,
  tasks,
  pages,
  pageRevisions,
  documents,
  meetings,
  transcripts,
};

type WorkspaceTables = typeof workspaceTables;

export type WorkspaceRows = {
  [Name in keyof WorkspaceTables]: WorkspaceTables[Name]["$inferInsert"][];
};

export type RowContext = {
  organizationId: string;
  /** Keyed by lower-cased email: every user of the document. */
  userIdByEmail: ReadonlyMap<string, string>;
  /** Stands in for publication and minutes times the document leaves out. */
  importedAt: Date;
};

type Builder = RowContext & { rows: WorkspaceRows };

function emptyRows(): WorkspaceRows {
  const entries = Object.keys(workspaceTables).map((name) => [name, []]);
  return Object.fromEntries(entries) as WorkspaceRows;
}

function lookup(ids: ReadonlyMap<string, string>, key: string, what: string): string {
  const id = ids.get(key);
  // parseWorkspaceDocument has resolved every reference, so a miss is a bug here.
  if (id === undefined) throw new Error(`unresolved ${what} ${key}`);
  return id;
}

function addDocument(
  document: DocumentInput,
  projectId: string | null,
  builder: Builder,
): ImportedDocument {
  const id = randomUUID();
  builder.rows.documents.push({
    id,
    organizationId: builder.organizationId,
    projectId,
    category: document.category,
    kind: document.kind,
    title: document.title,
    description: document.description ?? null,
    url: document.url ?? null,
    filename: document.filename ?? null,
    byteSize: document.byteSize ?? null,
    contentType: document.contentType ?? null,
    uploadedBy: null,
  });
  return { id, ...document };
}

function addTranscript(
  transcript: TranscriptInput,
  meetingId: string,
  builder: Builder,
): Identified<TranscriptInput> {
  const id = randomUUID();
  const notes = transcript.notes ?? null;
  const notesStatus = transcript.notesStatus ?? (notes === null ? "none" : "ready");
  builder.rows.transcripts.push({
    id,
    meetingId,
    status: transcript.status,
    text: transcript.text,
    notes,
    notesStatus,
    notesSource: transcript.notesSource ?? null,
  });
  return { id, ...transcript, notesStatus };
}

function addMeeting(
  meeting: MeetingInput,
  projectId: string | null,
  builder: Builder,
): ImportedMeeting {
  const id = randomUUID();
  const hasMinutes = meeting.minutesMarkdown !== undefined;
  builder.rows.meetings.push({
    id,
    organizationId: builder.organizationId,
    projectId,
    title: meeting.title ?? null,
    startsAt: new Date(meeting.startsAt),
    durationMinutes: meeting.durationMinutes,
    status: meeting.status,
    locationType: meeting.locationType,
    location: meeting.location ?? null,
    description: meeting.description ?? null,
    audience: meeting.audience,
    ...importedMinutes(hasMinutes ? (meeting.minutesMarkdown ?? "") : undefined),
    minutesUpdatedAt: hasMinutes ? builder.importedAt : null,
  });
  const { transcript, ...fields } = meeting;
  if (transcript === undefined) return { id, ...fields };
  return { id, ...fields, transcript: addTranscript(transcript, id, builder) };
}

/** As the file says: a published version without `publishedAt` has none (the API shows null). */
function publicationTime(version: SpecVersionInput): Date | null {
  return version.status === "draft" || version.publishedAt == null
    ? null
    : new Date(version.publishedAt);
}

// Drizzle binds a JS null as SQL NULL; a spec value of JSON null must be stored as such.
function jsonValue(value: unknown): unknown {
  return value === null ? sql`'null'::jsonb` : value;
}

function addSpec(spec: SpecInput, projectId: string, builder: Builder): ImportedSpec {
  const id = randomUUID();
  builder.rows.specs.push({
    id,
    projectId,
    slug: spec.slug,
    name: spec.name,
    kind: spec.kind ?? null,
    units: spec.units ?? null,
    valueType: spec.valueType ?? null,
  });
  // Oldest first: the insertion order becomes `sequence`, which decides the latest version.
  const versions = spec.versions.map((version) => {
    const versionId = randomUUID();
    builder.rows.specVersions.push({
      id: versionId,
      specId: id,
      version: version.version,
      status: version.status,
      value: jsonValue(version.value),
      publishedAt: publicationTime(version),
    });
    return { id: versionId, ...version };
  });
  return { id, ...spec, versions };
}

type LineageIds = { specs: ReadonlyMap<string, string>; components: ReadonlyMap<string, string> };

function addComponent(
  component: ComponentInput,
  projectId: string,
  lineageIds: LineageIds,
  builder: Builder,
): ImportedComponent {
  const id = lookup(lineageIds.components, component.slug, "component");
  builder.rows.components.push({
    id,
    projectId,
    slug: component.slug,
    name: component.name,
    kind: component.kind ?? null,
  });
  for (const reference of component.dependsOn.map(parseDependencyReference)) {
    const ids = reference.kind === "spec" ? lineageIds.specs : lineageIds.components;
    const dependency = lookup(ids, reference.slug, reference.kind);
    builder.rows.componentDependencies.push({
      componentId: id,
      dependsOnSpecId: reference.kind === "spec" ? dependency : null,
      dependsOnComponentId: reference.kind === "component" ? dependency : null,
    });
  }
  const versions = component.versions.map((version) => {
    const versionId = randomUUID();
    builder.rows.componentVersions.push({ id: versionId, componentId: id, ...version });
    return { id: versionId, ...version };
  });
  return { id, ...component, versions };
}

function addMilestone(
  milestone: MilestoneInput,
  projectId: string,
  builder: Builder,
): Identified<MilestoneInput> {
  const id = randomUUID();
  builder.rows.milestones.push({
    id,
    projectId,
    name: milestone.name,
    kind: milestone.kind,
    status: milestone.status,
    targetDate: milestone.targetDate,
    actualDate: milestone.actualDate ?? null,
    description: milestone.description ?? null,
  });
  return { id, ...milestone };
}

function addTask(task: TaskInput, projectId: string, builder: Builder): Identified<TaskInput> {
  const id = randomUUID();
  const assignee = task.assignee_email;
  builder.rows.tasks.push({
    id,
    projectId,
    title: task.title,
    description: task.description ?? null,
    status: task.status,
    priority: task.priority,
    startDate: task.start_date ?? null,
    dueDate: task.due_date ?? null,
    blockedReason: task.blocked_reason ?? null,
    assignedTo:
      assignee == null ? null : lookup(builder.userIdByEmail, assignee.toLowerCase(), "user"),
  });
  return { id, ...task };
}

function importedMinutes(markdown: string | undefined) {
  if (markdown === undefined) return { minutes: null, minutesText: "" };
  const minutes = markdownToRichText(markdown);
  return { minutes, minutesText: richTextToPlainText(minutes) };
}

/** Parents before children, so one multi-row insert satisfies the parent reference. */
function addPages(
  pageInputs: readonly PageInput[],
  projectId: string,
  parentId: string | null,
  builder: Builder,
): ImportedPage[] {
  return pageInputs.map((page, position) => {
    const id = randomUUID();
    const body = page.markdown === undefined ? emptyRichText() : markdownToRichText(page.markdown);
    const text = richTextToPlainText(body);
    builder.rows.pages.push({ id, projectId, parentId, title: page.title, position, body, text });
    builder.rows.pageRevisions.push({ pageId: id, title: page.title, body, authorId: null });
    const children = addPages(page.children, projectId, id, builder);
    return { id, ...page, children };
  });
}

function addProject(project: ProjectInput, builder: Builder): ImportedProject {
  const id = randomUUID();
  builder.rows.projects.push({
    id,
    organizationId: builder.organizationId,
    slug: project.slug,
    name: project.name,
    status: project.status,
    visibility: project.visibility,
    description: project.description ?? null,
    startDate: project.startDate ?? null,
    targetDate: project.targetDate ?? null,
  });
  const specs = project.specs.map((spec) => addSpec(spec, id, builder));
  const lineageIds: LineageIds = {
    specs: new Map(specs.map((spec) => [spec.slug, spec.id])),
    components: new Map(project.components.map((component) => [component.slug, randomUUID()])),
  };
  return {
    id,
    ...project,
    specs,
    components: project.components.map((c) => addComponent(c, id, lineageIds, builder)),
    milestones: project.milestones.map((milestone) => addMilestone(milestone, id, builder)),
    tasks: project.tasks.map((task) => addTask(task, id, builder)),
    pages: addPages(project.pages, id, null, builder),
    documents: project.documents.map((document) => addDocument(document, id, builder)),
    meetings: project.meetings.map((meeting) => addMeeting(meeting, id, builder)),
  };
}

/** Everything below the organisation and its members. */
export function buildWorkspaceRows(document: WorkspaceDocument, context: RowContext) {
  const builder: Builder = { ...context, rows: emptyRows() };
  const documents = document.documents.map((entry) => addDocument(entry, null, builder));
  const meetings = document.meetings.map((meeting) => addMeeting(meeting, null, builder));
  const projects = document.projects.map((project) => addProject(project, builder));
  return { rows: builder.rows, documents, meetings, projects };
}
