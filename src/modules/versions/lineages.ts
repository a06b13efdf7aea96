import { and, desc, eq, type SQLWrapper } from "drizzle-orm";
import type { PgTable, SelectedFields } from "drizzle-orm/pg-core";
import type { Db } from "../../db/client.js";
import { components, componentVersions, specs, specVersions } from "../../db/schema/index.js";

/** The status of a published version; the API shows only those (component status is free text). */
export const PUBLISHED = "published";

/** A spec's versions: their owner, the table and the column naming the owner. */
export const specLineage = { owners: specs, versions: specVersions, ownerOf: specVersions.specId };

/** A component's versions. */
export const componentLineage = {
  owners: components,
  versions: componentVersions,
  ownerOf: componentVersions.componentId,
};

export type Lineage = typeof specLineage | typeof componentLineage;

/**
 * The latest published version of an owner: the highest sequence (creation order) among its
 * published versions; drafts never count. `owner` is an id, or the owner's id column for a
 * lateral join over many owners.
 */
export function latestPublished<S extends SelectedFields>(
  db: Db,
  { versions, ownerOf }: Lineage,
  owner: SQLWrapper | string,
  columns: S,
) {
  // Widened to a plain table and built step by step: the builder's types cannot follow a union
  // of two tables through a chain, and the row type comes from `columns` anyway.
  const query = db
    .select(columns)
    .from(versions as PgTable)
    .$dynamic();
  query.where(and(eq(ownerOf, owner), eq(versions.status, PUBLISHED)));
  query.orderBy(desc(versions.sequence));
  query.limit(1);
  return query;
}
