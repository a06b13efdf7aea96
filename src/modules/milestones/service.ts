import { asc, eq } from "drizzle-orm";
import { jsonArrayOf } from "../../db/json-rows.js";
import { milestones, projects } from "../../db/schema/index.js";
import { visibleProjectList } from "../projects/service.js";
import type { Milestone } from "./schemas.js";

/** One query: the visible project's milestones by target date, name, creation order. */
export const listMilestones = visibleProjectList<Milestone>("list_milestones", () =>
  jsonArrayOf<Milestone>(
    {
      name: milestones.name,
      kind: milestones.kind,
      status: milestones.status,
      targetDate: milestones.targetDate,
      actualDate: milestones.actualDate,
      description: milestones.description,
    },
    {
      from: milestones,
      where: eq(milestones.projectId, projects.id),
      orderBy: [asc(milestones.targetDate), asc(milestones.name), asc(milestones.sequence)],
    },
  ),
);
