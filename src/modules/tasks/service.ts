import { and, asc, eq, sql } from "drizzle-orm";
import { InvalidRequest, NotFound } from "../../core/errors.js";
import type { Actor } from "../../core/principal.js";
import type { Db } from "../../db/client.js";
import { projects, tasks } from "../../db/schema/index.js";
import { creationDiff, diffOf, isEmptyDiff, recordChangeEvent } from "../change-events/service.js";
import { visibleProjectId, visibleProjectsOf } from "../projects/service.js";
import { isCurrentMember } from "../users/service.js";
import type { NewTask, Task, TaskPatch } from "./schemas.js";

// The same body as a task_id that is not a uuid (mapped from params validation), so unknown,
// private, foreign and malformed ids cannot be told apart.
const TASK_NOT_FOUND = new NotFound().message;

/** Two queries: the visible project, then its tasks in creation order (oldest first). */
export async function listTasks(db: Db, organizationId: string, slug: string): Promise<Task[]> {
  const projectId = await visibleProjectId(db, organizationId, slug);
  return db
    .select({
      title: tasks.title,
      status: tasks.status,
      priority: tasks.priority,
      targetDate: tasks.dueDate,
      description: tasks.description,
    })
    .from(tasks)
    .where(eq(tasks.projectId, projectId))
    .orderBy(asc(tasks.sequence));
}

/** The task's writable columns, read under their TaskPatch names (the change-event diff). */
const taskPatchColumns = {
  title: tasks.title,
  description: tasks.description,
  status: tasks.status,
  priority: tasks.priority,
  start_date: tasks.startDate,
  due_date: tasks.dueDate,
  blocked_reason: tasks.blockedReason,
  assigned_to: tasks.assignedTo,
};

type TaskColumns = Partial<typeof tasks.$inferInsert>;

/** TaskPatch fields to column values; absent fields stay absent, null stays null. */
function columnsOf(patch: TaskPatch): TaskColumns {
  const columns: TaskColumns = {};
  if (patch.title !== undefined) columns.title = patch.title;
  if (patch.description !== undefined) columns.description = patch.description;
  if (patch.status !== undefined) columns.status = patch.status;
  if (patch.priority !== undefined) columns.priority = patch.priority;
  if (patch.start_date !== undefined) columns.startDate = patch.start_date;
  if (patch.due_date !== undefined) columns.dueDate = patch.due_date;
  if (patch.blocked_reason !== undefined) columns.blockedReason = patch.blocked_reason;
  if (patch.assigned_to !== undefined) columns.assignedTo = patch.assigned_to;
  return columns;
}

/** Spec rule 7: an assignee is a user of the token's organisation, and still a member. */
async function requireCurrentMember(db: Db, organizationId: string, userId: string) {
  if (!(await isCurrentMember(db, organizationId, userId))) {
    throw new InvalidRequest("assigned_to: not a current member of this organisation");
  }
}

/**
 * Creates a task in a visible project. The project (404) is checked before the assignee (400):
 * a write is judged only once its target exists.
 */
export async function createTask(
  db: Db,
  projectSlug: string,
  { organizationId, authorId }: Actor,
  input: NewTask,
): Promise<{ id: string }> {
  return db.transaction(async (tx) => {
    const projectId = await visibleProjectId(tx, organizationId, projectSlug);
    if (input.assigned_to != null)
      await requireCurrentMember(tx, organizationId, input.assigned_to);
    const [task] = await tx
      .insert(tasks)
      .values({
        status: "not_started",
        priority: "normal",
        ...columnsOf(input),
        title: input.title,
        projectId,
        createdBy: authorId,
        updatedBy: authorId,
      })
      .returning({ id: tasks.id, ...taskPatchColumns });
    if (task === undefined) throw new Error("task insert returned no row");
    const { id, ...fields } = task;
    await recordChangeEvent(tx, {
      organizationId,
      type: "task.created",
      targetId: id,
      actorId: authorId,
      diff: creationDiff(fields),
    });
    return { id };
  });
}

/** The task, read through its project (visibility and organisation in the query), locked. */
async function lockVisibleTask(tx: Db, organizationId: string, taskId: string) {
  const [current] = await tx
    .select(taskPatchColumns)
    .from(tasks)
    .innerJoin(projects, eq(projects.id, tasks.projectId))
    .where(and(eq(tasks.id, taskId), visibleProjectsOf(organizationId)))
    .for("update", { of: tasks });
  if (current === undefined) throw new NotFound(TASK_NOT_FOUND);
  return current;
}

/**
 * Changes the fields sent on a task of a visible project; the lock makes the diff exact. Only
 * the fields whose value differs are written and listed in the `task.updated` diff; when none
 * does, nothing is written and no event is recorded (write-effects.ts).
 */
export async function updateTask(
  db: Db,
  taskId: string,
  { organizationId, authorId }: Actor,
  input: TaskPatch,
): Promise<{ id: string }> {
  return db.transaction(async (tx) => {
    const current = await lockVisibleTask(tx, organizationId, taskId);
    if (input.assigned_to != null)
      await requireCurrentMember(tx, organizationId, input.assigned_to);
    const diff = diffOf(current, input);
    if (isEmptyDiff(diff)) return { id: taskId };
    await tx
      .update(tasks)
      .set({ ...columnsOf(diff.after as TaskPatch), updatedBy: authorId, updatedAt: sql`now()` })
      .where(eq(tasks.id, taskId));
    await recordChangeEvent(tx, {
      organizationId,
      type: "task.updated",
      targetId: taskId,
      actorId: authorId,
      diff,
    });
    return { id: taskId };
  });
}
