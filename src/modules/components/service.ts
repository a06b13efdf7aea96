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
  const latest = latestPublished(db, componentLineage, components.id, {
    version: componentVersions.version,
    status: componentVersions.status,
    lifecycleStage: componentVersions.lifecycleStage,
    healthStatus: componentVersions.healthStatus,
  }).as("latest");
  // Every column of a stored version is NOT NULL: a null version means none is published.
  const latestVersion = sql`case when ${latest.version} is null then null else ${jsonObjectOf({
    version: latest.version,
    status: latest.status,
    lifecycleStage: latest.lifecycleStage,
    healthStatus: latest.healthStatus,
  })} end`;
  return jsonArrayOf<Component>(
    { slug: components.slug, name: components.name, kind: components.kind, latest: latestVersion },
    {
      from: sql`${components} left join lateral ${latest} on true`,
      where: eq(components.projectId, projects.id),
      orderBy: [asc(components.name), asc(components.slug)],
    },
  );
});
