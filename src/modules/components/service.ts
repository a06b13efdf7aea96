import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { components, componentVersions } from "../../db/schema/index.js";
import { visibleProjectId } from "../projects/service.js";
import { componentLineage, latestPublished } from "../versions/lineages.js";
import type { Component } from "./schemas.js";

/**
 * The project's components with their latest published version, in two queries: the visible
 * project, then every component with a lateral join picking its highest-sequence published
 * version. Ordered by name, then slug (unique within a project).
 */
export async function listComponents(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<Component[]> {
  const projectId = await visibleProjectId(db, organizationId, slug);
  const latest = latestPublished(db, componentLineage, components.id, {
    version: componentVersions.version,
    status: componentVersions.status,
    lifecycleStage: componentVersions.lifecycleStage,
    healthStatus: componentVersions.healthStatus,
  }).as("latest");
  const rows = await db
    .select({
      slug: components.slug,
      name: components.name,
      kind: components.kind,
      latestVersion: latest.version,
      latestStatus: latest.status,
      latestLifecycleStage: latest.lifecycleStage,
      latestHealthStatus: latest.healthStatus,
    })
    .from(components)
    .leftJoinLateral(latest, sql`true`)
    .where(eq(components.projectId, projectId))
    .orderBy(asc(components.name), asc(components.slug));
  return rows.map((row) => ({
    slug: row.slug,
    name: row.name,
    kind: row.kind,
    // Every column of a stored version is NOT NULL: nulls mean the join found no version.
    latest:
      row.latestVersion === null ||
      row.latestStatus === null ||
      row.latestLifecycleStage === null ||
      row.latestHealthStatus === null
        ? null
        : {
            version: row.latestVersion,
            status: row.latestStatus,
            lifecycleStage: row.latestLifecycleStage,
            healthStatus: row.latestHealthStatus,
          },
  }));
}
