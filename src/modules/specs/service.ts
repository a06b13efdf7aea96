import { asc, eq, sql } from "drizzle-orm";
import { isoDateTimeOf, jsonArrayOf, jsonObjectOf } from "../../db/json-rows.js";
import { projects, specs, specVersions } from "../../db/schema/index.js";
import { visibleProjectList } from "../projects/service.js";
import { latestPublished, specLineage } from "../versions/lineages.js";
import type { Spec } from "./schemas.js";

/**
 * The project's specs with their latest published version, in one query: the visible project,
 * its specs, and for each a lateral join picking its highest-sequence published version
 * (drafts never leave the database). Ordered by name, then slug (unique within a project).
 */
export const listSpecs = visibleProjectList<Spec>("list_specs", (db) => {
  // No published version leaves the lateral join's row, and so `latest`, null; a published
  // value may itself be JSON null.
  const latest = latestPublished(db, specLineage, specs.id, {
    object: jsonObjectOf({
      version: specVersions.version,
      status: specVersions.status,
      value: specVersions.value,
      publishedAt: isoDateTimeOf(specVersions.publishedAt),
    }).as("object"),
  }).as("latest");
  return jsonArrayOf<Spec>(
    {
      slug: specs.slug,
      name: specs.name,
      kind: specs.kind,
      units: specs.units,
      valueType: specs.valueType,
      latest: latest.object,
    },
    {
      from: sql`${specs} left join lateral ${latest} on true`,
      where: eq(specs.projectId, projects.id),
      orderBy: [asc(specs.name), asc(specs.slug)],
    },
  );
});
