import { asc, eq, sql } from "drizzle-orm";
import { jsonArrayOf, jsonObjectOf } from "../../db/json-rows.js";
import { components, componentVersions, projects } from "../../db/schema/index.js";
import { visibleProjectList } from "../projects/service.js";
import { componentLineage, latestPublished } from "../versions/lineages.js";
import type { Component } from "./schemas.js";

/**
 * The project's components with their latest published version, in one query: the visible
 * project, its components, and for each a lateral join picking its highest-sequence published
 * version. Ordered by name, then slug (unique within a project).
 */
export const listComponents = visibleProjectList<Component>("list_components", (db) => {
  // No published version leaves the lateral join's row, and so `latest`, null.
  const latest = latestPublished(db, componentLineage, components.id, {
    object: jsonObjectOf({
      version: componentVersions.version,
      status: componentVersions.status,
      lifecycleStage: componentVersions.lifecycleStage,
      healthStatus: componentVersions.healthStatus,
    }).as("object"),
  }).as("latest");
  return jsonArrayOf<Component>(
    { slug: components.slug, name: components.name, kind: components.kind, latest: latest.object },
    {
      from: sql`${components} left join lateral ${latest} on true`,
      where: eq(components.projectId, projects.id),
      orderBy: [asc(components.name), asc(components.slug)],
    },
  );
});
