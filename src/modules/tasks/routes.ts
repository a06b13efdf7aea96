import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf, writerOf } from "../../http/auth.js";
import { ok, sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { withWriteEffect } from "../change-events/write-effects.js";
import {
  newTaskSchema,
  taskIdParams,
  taskPatchSchema,
  taskRefSchema,
  taskSchema,
} from "./schemas.js";
import { createTask, listTasks, updateTask } from "./service.js";

export const taskRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/projects/:slug/tasks",
    apiRoute({
      access: "tasks:read",
      operationId: "listTasks",
      summary: "List a project's tasks",
      description:
        "Ordered by creation, oldest first. `targetDate` is the task's due date. An unknown, foreign or private project answers 404.",
      tags: ["Tasks"],
      params: projectSlugParams,
      data: z.array(taskSchema),
    }),
    async (request, reply) =>
      sendJsonData(reply, await listTasks(app.db, organizationOf(request), request.params.slug)),
  );

  app.post(
    "/projects/:slug/tasks",
    apiRoute({
      access: "tasks:write",
      operationId: "createTask",
      summary: "Create a task",
      description: withWriteEffect(
        "createTask",
        "Attributed to the token's user. `assigned_to` must be a current member of the organisation (else 400). An unknown, foreign or private project answers 404.",
      ),
      tags: ["Tasks"],
      params: projectSlugParams,
      body: newTaskSchema,
      data: taskRefSchema,
    }),
    async (request) =>
      ok(await createTask(app.db, request.params.slug, writerOf(request), request.body)),
  );

  app.patch(
    "/tasks/:task_id",
    apiRoute({
      access: "tasks:write",
      operationId: "updateTask",
      summary: "Update a task",
      description: withWriteEffect(
        "updateTask",
        "Only the fields sent change; null clears a nullable field; any status may follow any other. A task of a private project or of another organisation answers 404.",
      ),
      tags: ["Tasks"],
      params: taskIdParams,
      body: taskPatchSchema,
      data: taskRefSchema,
    }),
    async (request) =>
      ok(await updateTask(app.db, request.params.task_id, writerOf(request), request.body)),
  );
};
