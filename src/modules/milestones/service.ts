import { asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { prepared } from "../../db/prepared.js";
import { milestones, projects } from "../../db/schema/index.js";
import {
  itemsOfVisibleProject,
  refuseImpossibleSlug,
  visibleProjectBySlug,
} from "../projects/service.js";
import type { Milestone } from "./schemas.js";

const milestoneList = prepared((db) =>
  db
    .select({
      milestone: {
        name: milestones.name,
        kind: milestones.kind,
        status: milestones.status,
        targetDate: milestones.targetDate,
        actualDate: milestones.actualDate,
        description: milestones.description,
      },
    })
    .from(projects)
    .leftJoin(milestones, eq(milestones.projectId, projects.id))
    .where(visibleProjectBySlug)
    .orderBy(asc(milestones.targetDate), asc(milestones.name), asc(milestones.sequence))
    .prepare("list_milestones"),
);

/** One query: the visible project's milestones by target date, name, creation order. */
export async function listMilestones(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<Milestone[]> {
  refuseImpossibleSlug(slug);
  const rows = await milestoneList(db).execute({ organizationId, slug });
  return itemsOfVisibleProject(rows, "milestone");
}
