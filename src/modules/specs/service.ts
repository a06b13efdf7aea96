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
  const latest = latestPublished(db, specLineage, specs.id, {
    version: specVersions.version,
    status: specVersions.status,
    value: specVersions.value,
    publishedAt: specVersions.publishedAt,
  }).as("latest");
  // `version` is never null on a stored version, so null means no published version; the
  // value alone cannot tell, since a published value may be JSON null.
  const latestVersion = sql`case when ${latest.version} is null then null else ${jsonObjectOf({
    version: latest.version,
    status: latest.status,
    value: latest.value,
    publishedAt: isoDateTimeOf(latest.publishedAt),
  })} end`;
  return jsonArrayOf<Spec>(
    {
      slug: specs.slug,
      name: specs.name,
      kind: specs.kind,
      units: specs.units,
      valueType: specs.valueType,
      latest: latestVersion,
    },
    {
      from: sql`${specs} left join lateral ${latest} on true`,
      where: eq(specs.projectId, projects.id),
      orderBy: [asc(specs.name), asc(specs.slug)],
    },
  );
});
