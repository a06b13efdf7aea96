import { z } from "zod";
import { id, isoDate, storableText, writableDate } from "../../core/values.js";
import { taskPriority, taskStatus } from "../../db/schema/index.js";

const taskStatusSchema = z.enum(taskStatus.enumValues);
const taskPrioritySchema = z.enum(taskPriority.enumValues);

export const taskSchema = z
  .object({
    title: z.string(),
    status: taskStatusSchema,
    priority: taskPrioritySchema,
    targetDate: isoDate.nullable().describe("The task's due date"),
    description: z.string().nullable(),
  })
  .meta({ id: "Task", description: "A task as listed; the list item carries no id." });

export type Task = z.infer<typeof taskSchema>;

const taskTitle = storableText.min(2).max(200);

// Spec "TaskPatch". No `.default()` anywhere: a PATCH touches only the fields sent.
const taskPatchShape = {
  title: taskTitle.optional(),
  description: storableText.max(4000).nullable().optional(),
  status: taskStatusSchema.optional(),
  priority: taskPrioritySchema.optional(),
  start_date: writableDate.nullable().optional(),
  due_date: writableDate.nullable().optional(),
  blocked_reason: storableText.max(500).nullable().optional(),
  assigned_to: id
    .nullable()
    .optional()
    .describe("The id of a current member of the token's organisation; null unassigns"),
};

export const taskPatchSchema = z.strictObject(taskPatchShape).meta({
  id: "TaskPatch",
  description: "Only the fields sent change; null clears a nullable field.",
  examples: [{ status: "done", blocked_reason: null }],
});

export const newTaskSchema = z.strictObject({ ...taskPatchShape, title: taskTitle }).meta({
  id: "TaskCreate",
  description:
    "TaskPatch with `title` required. Defaults: status `not_started`, priority `normal`.",
  examples: [{ title: "Order gripper samples", priority: "high", due_date: "2026-03-15" }],
});

export type TaskPatch = z.infer<typeof taskPatchSchema>;
export type NewTask = z.infer<typeof newTaskSchema>;

export const taskIdParams = z.object({ task_id: id });

export const taskRefSchema = z.object({ id });
