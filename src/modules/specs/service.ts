import { asc, eq, sql } from "drizzle-orm";
import { toIsoDateTime } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { prepared } from "../../db/prepared.js";
import { projects, specs, specVersions } from "../../db/schema/index.js";
import {
  itemsOfVisibleProject,
  refuseImpossibleSlug,
  visibleProjectBySlug,
} from "../projects/service.js";
import { latestPublished, specLineage } from "../versions/lineages.js";
import type { JsonValue, Spec } from "./schemas.js";

const specList = prepared((db) => {
  const latest = latestPublished(db, specLineage, specs.id, {
    version: specVersions.version,
    status: specVersions.status,
    value: specVersions.value,
    publishedAt: specVersions.publishedAt,
  }).as("latest");
  return db
    .select({
      spec: {
        slug: specs.slug,
        name: specs.name,
        kind: specs.kind,
        units: specs.units,
        valueType: specs.valueType,
      },
      latest: {
        version: latest.version,
        status: latest.status,
        value: latest.value,
        publishedAt: latest.publishedAt,
      },
    })
    .from(projects)
    .leftJoin(specs, eq(specs.projectId, projects.id))
    .leftJoinLateral(latest, sql`true`)
    .where(visibleProjectBySlug)
    .orderBy(asc(specs.name), asc(specs.slug))
    .prepare("list_specs");
});

/**
 * The project's specs with their latest published version, in one query: the visible project,
 * its specs, and for each a lateral join picking its highest-sequence published version
 * (drafts never leave the database). Ordered by name, then slug (unique within a project).
 */
export async function listSpecs(db: Db, organizationId: string, slug: string): Promise<Spec[]> {
  refuseImpossibleSlug(slug);
  const rows = await specList(db).execute({ organizationId, slug });
  return itemsOfVisibleProject(
    rows.map((row) => ({ spec: row.spec === null ? null : { ...row.spec, latest: row.latest } })),
    "spec",
  ).map(({ latest, ...spec }) => ({
    ...spec,
    // `version` is never null on a stored version, so null means no published version; the
    // value alone cannot tell, since a published value may be JSON null.
    latest:
      latest === null || latest.version === null || latest.status === null
        ? null
        : {
            version: latest.version,
            status: latest.status,
            // A jsonb column holds parsed JSON; Drizzle only types it as unknown.
            value: latest.value as JsonValue,
            publishedAt: toIsoDateTime(latest.publishedAt),
          },
  }));
}
