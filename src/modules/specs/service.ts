import { asc, eq, sql } from "drizzle-orm";
import { toIsoDateTime } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { specs, specVersions } from "../../db/schema/index.js";
import { visibleProjectId } from "../projects/service.js";
import { latestPublished, specLineage } from "../versions/lineages.js";
import type { JsonValue, Spec } from "./schemas.js";

/**
 * The project's specs with their latest published version, in two queries: the visible
 * project, then every spec with a lateral join picking its highest-sequence published version
 * (drafts never leave the database). Ordered by name, then slug (unique within a project).
 */
export async function listSpecs(db: Db, organizationId: string, slug: string): Promise<Spec[]> {
  const projectId = await visibleProjectId(db, organizationId, slug);
  const latest = latestPublished(db, specLineage, specs.id, {
    version: specVersions.version,
    status: specVersions.status,
    value: specVersions.value,
    publishedAt: specVersions.publishedAt,
  }).as("latest");
  const rows = await db
    .select({
      slug: specs.slug,
      name: specs.name,
      kind: specs.kind,
      units: specs.units,
      valueType: specs.valueType,
      latestVersion: latest.version,
      latestStatus: latest.status,
      latestValue: latest.value,
      latestPublishedAt: latest.publishedAt,
    })
    .from(specs)
    .leftJoinLateral(latest, sql`true`)
    .where(eq(specs.projectId, projectId))
    .orderBy(asc(specs.name), asc(specs.slug));
  return rows.map((row) => ({
    slug: row.slug,
    name: row.name,
    kind: row.kind,
    units: row.units,
    valueType: row.valueType,
    // `version` is never null on a stored version, so null means no published version; the
    // value alone cannot tell, since a published value may be JSON null.
    latest:
      row.latestVersion === null || row.latestStatus === null
        ? null
        : {
            version: row.latestVersion,
            status: row.latestStatus,
            // A jsonb column holds parsed JSON; Drizzle only types it as unknown.
            value: row.latestValue as JsonValue,
            publishedAt: toIsoDateTime(row.latestPublishedAt),
          },
  }));
}
