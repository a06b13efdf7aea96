import { asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { milestones } from "../../db/schema/index.js";
import { visibleProjectId } from "../projects/service.js";
import type { Milestone } from "./schemas.js";

/** Two queries: the visible project, then its milestones by target date, name, creation order. */
export async function listMilestones(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<Milestone[]> {
  const projectId = await visibleProjectId(db, organizationId, slug);
  return db
    .select({
      name: milestones.name,
      kind: milestones.kind,
      status: milestones.status,
      targetDate: milestones.targetDate,
      actualDate: milestones.actualDate,
      description: milestones.description,
    })
    .from(milestones)
    .where(eq(milestones.projectId, projectId))
    .orderBy(asc(milestones.targetDate), asc(milestones.name), asc(milestones.sequence));
}
