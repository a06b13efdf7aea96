import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { prepared } from "../../db/prepared.js";
import { components, componentVersions, projects } from "../../db/schema/index.js";
import {
  itemsOfVisibleProject,
  refuseImpossibleSlug,
  visibleProjectBySlug,
} from "../projects/service.js";
import { componentLineage, latestPublished } from "../versions/lineages.js";
import type { Component } from "./schemas.js";

const componentList = prepared((db) => {
  const latest = latestPublished(db, componentLineage, components.id, {
    version: componentVersions.version,
    status: componentVersions.status,
    lifecycleStage: componentVersions.lifecycleStage,
    healthStatus: componentVersions.healthStatus,
  }).as("latest");
  return db
    .select({
      component: { slug: components.slug, name: components.name, kind: components.kind },
      latest: {
        version: latest.version,
        status: latest.status,
        lifecycleStage: latest.lifecycleStage,
        healthStatus: latest.healthStatus,
      },
    })
    .from(projects)
    .leftJoin(components, eq(components.projectId, projects.id))
    .leftJoinLateral(latest, sql`true`)
    .where(visibleProjectBySlug)
    .orderBy(asc(components.name), asc(components.slug))
    .prepare("list_components");
});

/**
 * The project's components with their latest published version, in one query: the visible
 * project, its components, and for each a lateral join picking its highest-sequence published
 * version. Ordered by name, then slug (unique within a project).
 */
export async function listComponents(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<Component[]> {
  refuseImpossibleSlug(slug);
  const rows = await componentList(db).execute({ organizationId, slug });
  return itemsOfVisibleProject(
    rows.map((row) => ({
      component: row.component === null ? null : { ...row.component, latest: row.latest },
    })),
    "component",
  ).map(({ latest, ...component }) => ({
    ...component,
    // Every column of a stored version is NOT NULL: nulls mean the join found no version.
    latest:
      latest === null ||
      latest.version === null ||
      latest.status === null ||
      latest.lifecycleStage === null ||
      latest.healthStatus === null
        ? null
        : {
            version: latest.version,
            status: latest.status,
            lifecycleStage: latest.lifecycleStage,
            healthStatus: latest.healthStatus,
          },
  }));
}
