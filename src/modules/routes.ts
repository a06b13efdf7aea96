import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { componentRoutes } from "./components/routes.js";
import { documentRoutes } from "./documents/routes.js";
import { meRoutes } from "./me/routes.js";
import { meetingRoutes } from "./meetings/routes.js";
import { milestoneRoutes } from "./milestones/routes.js";
import { pageRoutes } from "./pages/routes.js";
import { projectRoutes } from "./projects/routes.js";
import { specRoutes } from "./specs/routes.js";
import { taskRoutes } from "./tasks/routes.js";

/** Every /api/v1 route plugin, one per domain area. */
export const moduleRoutes: FastifyPluginAsyncZod[] = [
  meRoutes,
  projectRoutes,
  specRoutes,
  componentRoutes,
  milestoneRoutes,
  taskRoutes,
  pageRoutes,
  documentRoutes,
  meetingRoutes,
];
