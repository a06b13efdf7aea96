import { and, asc, eq, type SQL, sql } from "drizzle-orm";
import { InvalidRequest, NotFound } from "../../core/errors.js";
import type { Actor } from "../../core/principal.js";
import { type Db, rowsOf } from "../../db/client.js";
import { jsonArrayOf } from "../../db/json-rows.js";
import { changeEvents, projects, tasks } from "../../db/schema/index.js";
import { catalogueEntry } from "../change-events/catalogue.js";
import { diffOf, isEmptyDiff, recordChangeEvent } from "../change-events/service.js";
import {
  PROJECT_NOT_FOUND,
  refuseImpossibleSlug,
  visibleProjectId,
  visibleProjectList,
  visibleProjectsOf,
} from "../projects/service.js";
import { isCurrentMember } from "../users/service.js";
import type { NewTask, Task, TaskPatch } from "./schemas.js";

// The same body as a task_id that is not a uuid (mapped from params validation), so unknown,
// private, foreign and malformed ids cannot be told apart.
const TASK_NOT_FOUND = new NotFound().message;

/** One query: the visible project's tasks in creation order (oldest first), as JSON text. */
export const listTasks = visibleProjectList<Task>("list_tasks", () =>
  jsonArrayOf<Task>(
    {
      title: tasks.title,
      status: tasks.status,
      priority: tasks.priority,
      targetDate: tasks.dueDate,
      description: tasks.description,
    },
    { from: tasks, where: eq(tasks.projectId, projects.id), orderBy: [asc(tasks.sequence)] },
  ),
);

/**
 * The task's writable columns under their TaskPatch names, which are also the columns' SQL
 * names: the one list that reads (the change-event diff), inserts and updates use.
 */
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

type TaskField = keyof typeof taskPatchColumns;
const taskFields = Object.keys(taskPatchColumns) as TaskField[];

/** The fields sent (null included), each as its column and its value cast to the column's type. */
function sentColumns(patch: TaskPatch): { column: SQL; value: SQL }[] {
  return taskFields.flatMap((field) => {
    const value = patch[field];
    if (value === undefined) return [];
    const type = sql.raw(taskPatchColumns[field].getSQLType());
    return [{ column: sql`${sql.identifier(field)}`, value: sql`${value}::${type}` }];
  });
}

function commaList(items: SQL[]): SQL {
  return sql.join(items, sql`, `);
}

/** Spec rule 7: an assignee is a user of the token's organisation, and still a member. */
async function requireCurrentMember(db: Db, organizationId: string, userId: string) {
  if (!(await isCurrentMember(db, organizationId, userId))) {
    throw new InvalidRequest("assigned_to: not a current member of this organisation");
  }
}

/**
 * Creates a task and its `task.created` event in one statement: one round trip, atomic. The
 * project (404) is judged before the assignee (400): a write is judged once its target exists.
 */
export async function createTask(
  db: Db,
  projectSlug: string,
  { organizationId, authorId, traceContext }: Actor,
  input: NewTask,
): Promise<{ id: string }> {
  refuseImpossibleSlug(projectSlug);
  if (input.assigned_to != null) {
    await visibleProjectId(db, organizationId, projectSlug);
    await requireCurrentMember(db, organizationId, input.assigned_to);
  }
  const { action, targetKind } = catalogueEntry("task.created");
  // Fields not sent are left to the columns' defaults (status not_started, priority normal).
  const sent = sentColumns(input);
  const created = await db.execute(sql`
    with project as (
      select ${projects.id} from ${projects}
      where ${and(visibleProjectsOf(organizationId), eq(projects.slug, projectSlug))}
    ), task as (
      insert into ${tasks} (project_id, ${commaList(sent.map((field) => field.column))},
        created_by, updated_by)
      select project.id, ${commaList(sent.map((field) => field.value))}, ${authorId}, ${authorId}
      from project
      returning id, ${commaList(taskFields.map((field) => sql`${sql.identifier(field)}`))}
    ), event as (
      insert into ${changeEvents} (organization_id, type, action, target_kind, target_id, actor_id,
        diff, trace_context)
      -- The diff's after is the created task under its TaskPatch names, which are its columns'.
      select ${organizationId}, ${"task.created"}, ${action}, ${targetKind}, task.id, ${authorId},
        jsonb_build_object('before', '{}'::jsonb, 'after', to_jsonb(task) - 'id'),
        ${traceContext ?? null}
      from task
    )
    select id from task`);
  const [task] = rowsOf<{ id: string }>(created);
  if (task === undefined) throw new NotFound(PROJECT_NOT_FOUND);
  return { id: task.id };
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
  { organizationId, authorId, traceContext }: Actor,
  input: TaskPatch,
): Promise<{ id: string }> {
  return db.transaction(async (tx) => {
    const current = await lockVisibleTask(tx, organizationId, taskId);
    if (input.assigned_to != null)
      await requireCurrentMember(tx, organizationId, input.assigned_to);
    const diff = diffOf(current, input);
    if (isEmptyDiff(diff)) return { id: taskId };
    const changed = sentColumns(diff.after as TaskPatch).map(
      ({ column, value }) => sql`${column} = ${value}`,
    );
    await tx.execute(sql`
      update ${tasks} set ${commaList(changed)}, updated_by = ${authorId}, updated_at = now()
      where ${eq(tasks.id, taskId)}`);
    await recordChangeEvent(tx, {
      organizationId,
      type: "task.updated",
      targetId: taskId,
      actorId: authorId,
      traceContext,
      diff,
    });
    return { id: taskId };
  });
}
