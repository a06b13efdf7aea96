import { z } from "zod";
import { markdownText, writableDate, writableDateTime, writableSlug } from "../core/values.js";
import { documentCategory, documentKind, meetingAudience } from "../db/schema/library.js";
import {
  componentHealth,
  projectVisibility,
  specVersionStatus,
  taskPriority,
  taskStatus,
} from "../db/schema/projects.js";
import { emailSchema, memberRoleSchema } from "../modules/users/service.js";

// The workspace document read by `svc import`. Limits are the API's (spec, "Limits"); enums
// come from the database so the two cannot drift.

const slug = writableSlug;
// Values the spec types only as string: anything but empty.
const label = z.string().min(1);
// Postgres has no year 0000, and an integer column holds at most 2^31 - 1.
const isoDate = writableDate;
const isoDateTime = writableDateTime;
const int4 = z.int().nonnegative().max(2_147_483_647);
const httpUrl = z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" });

const organizationSchema = z.strictObject({ slug, name: label });

const userSchema = z.strictObject({
  email: emailSchema,
  name: label,
  role: memberRoleSchema,
  // Any non-empty password: fixtures and migrations from other systems bring their own.
  password: z.string().min(1).optional(),
});

const documentSchema = z
  .strictObject({
    category: z.enum(documentCategory.enumValues),
    kind: z.enum(documentKind.enumValues),
    title: z.string().min(1).max(200),
    description: z.string().max(2000).nullish(),
    url: httpUrl.nullish(),
    filename: z.string().nullish(),
    byteSize: z.int().nonnegative().nullish(),
    contentType: z.string().nullish(),
  })
  .superRefine((document, context) => {
    if (document.kind === "link" && document.url == null) {
      context.addIssue({
        code: "custom",
        path: ["url"],
        message: "a link document needs an absolute http(s) URL",
      });
    }
  });

const transcriptSchema = z.strictObject({
  status: label,
  text: z.string(),
  notes: z.string().nullish(),
  notesStatus: label.optional(),
  notesSource: label.nullish(),
});

const meetingSchema = z.strictObject({
  title: z.string().nullish(),
  startsAt: isoDateTime,
  durationMinutes: int4,
  status: label,
  locationType: label,
  location: z.string().nullish(),
  description: z.string().nullish(),
  audience: z.enum(meetingAudience.enumValues),
  minutesMarkdown: markdownText.optional(),
  transcript: transcriptSchema.optional(),
});

const specVersionSchema = z
  .strictObject({
    version: label,
    status: z.enum(specVersionStatus.enumValues),
    value: z.json(),
    publishedAt: isoDateTime.nullish(),
  })
  .superRefine((version, context) => {
    if (version.status === "draft" && version.publishedAt != null) {
      context.addIssue({
        code: "custom",
        path: ["publishedAt"],
        message: "a draft has no publication time",
      });
    }
  });

const specSchema = z.strictObject({
  slug,
  name: label,
  kind: label.nullish(),
  units: z.string().nullish(),
  valueType: z.string().nullish(),
  versions: z.array(specVersionSchema).default([]),
});

const componentVersionSchema = z.strictObject({
  version: label,
  status: label,
  lifecycleStage: label,
  healthStatus: z.enum(componentHealth.enumValues),
});

const dependencyReference = z
  .string()
  .regex(/^(spec|component):[a-z0-9][a-z0-9-]*$/, 'must be "spec:SLUG" or "component:SLUG"');

const componentSchema = z.strictObject({
  slug,
  name: label,
  kind: label.nullish(),
  dependsOn: z.array(dependencyReference).default([]),
  versions: z.array(componentVersionSchema).default([]),
});

const milestoneSchema = z.strictObject({
  name: label,
  kind: label,
  status: label,
  targetDate: isoDate,
  actualDate: isoDate.nullish(),
  description: z.string().nullish(),
});

// Snake case like the API's TaskPatch, so a task reads the same in both places.
const taskSchema = z.strictObject({
  title: z.string().min(2).max(200),
  description: z.string().max(4000).nullish(),
  status: z.enum(taskStatus.enumValues).default("not_started"),
  priority: z.enum(taskPriority.enumValues).default("normal"),
  start_date: isoDate.nullish(),
  due_date: isoDate.nullish(),
  blocked_reason: z.string().max(500).nullish(),
  assignee_email: emailSchema.nullish(),
});

const pageSchema = z.strictObject({
  title: z.string().min(1).max(200),
  markdown: markdownText.optional(),
  get children(): z.ZodDefault<z.ZodArray<typeof pageSchema>> {
    return z.array(pageSchema).default([]);
  },
});

const projectSchema = z.strictObject({
  slug,
  name: label,
  status: label,
  visibility: z.enum(projectVisibility.enumValues),
  description: z.string().nullish(),
  startDate: isoDate.nullish(),
  targetDate: isoDate.nullish(),
  specs: z.array(specSchema).default([]),
  components: z.array(componentSchema).default([]),
  milestones: z.array(milestoneSchema).default([]),
  tasks: z.array(taskSchema).default([]),
  pages: z.array(pageSchema).default([]),
  documents: z.array(documentSchema).default([]),
  meetings: z.array(meetingSchema).default([]),
});

export const workspaceDocumentSchema = z.strictObject({
  organization: organizationSchema,
  users: z.array(userSchema).default([]),
  // Team-level library and meetings outside any project.
  documents: z.array(documentSchema).default([]),
  meetings: z.array(meetingSchema).default([]),
  projects: z.array(projectSchema).default([]),
});

/** A document as written in a file: optional arrays and defaulted fields may be left out. */
export type WorkspaceDocumentInput = z.input<typeof workspaceDocumentSchema>;
/** A validated document with defaults applied. */
export type WorkspaceDocument = z.output<typeof workspaceDocumentSchema>;
export type UserInput = WorkspaceDocument["users"][number];
export type DocumentInput = WorkspaceDocument["documents"][number];
export type MeetingInput = WorkspaceDocument["meetings"][number];
export type TranscriptInput = NonNullable<MeetingInput["transcript"]>;
export type ProjectInput = WorkspaceDocument["projects"][number];
export type SpecInput = ProjectInput["specs"][number];
export type ComponentInput = ProjectInput["components"][number];
export type MilestoneInput = ProjectInput["milestones"][number];
export type TaskInput = ProjectInput["tasks"][number];
export type PageInput = ProjectInput["pages"][number];
export type SpecVersionInput = SpecInput["versions"][number];
export type ComponentVersionInput = ComponentInput["versions"][number];
