import { and, asc, eq, inArray, ne, type SQL, sql } from "drizzle-orm";
import type { PgTable, SelectedFields } from "drizzle-orm/pg-core";
import { InvalidRequest, NotFound } from "../../core/errors.js";
import { parseInput } from "../../core/input.js";
import { id } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { assertRowReturned } from "../../db/returned-row.js";
import {
  componentDependencies,
  components,
  componentVersions,
  organizations,
  projects,
  specVersions,
} from "../../db/schema/index.js";
import { recordChangeEvent } from "../change-events/service.js";
import type { JsonValue } from "../specs/schemas.js";
import { isCurrentMember } from "../users/service.js";
import {
  componentLineage,
  type Lineage,
  latestPublished,
  PUBLISHED,
  specLineage,
} from "../versions/lineages.js";
import {
  type ComponentHealth,
  type ComponentPublication,
  componentPublicationSchema,
  type Publisher,
  type SpecPublication,
  specPublicationSchema,
} from "./schemas.js";

const STALE = "stale";

export type Published = {
  /** The new version's id. */
  id: string;
  /** The recorded change event's id (the webhook payload `id`). */
  eventId: number;
  /** Slugs of the direct dependents whose latest published version this publish turned stale. */
  markedStale: string[];
};

// Drizzle binds a JS null as SQL NULL; a value of JSON null must be stored as such.
function jsonbValue(value: JsonValue) {
  return value === null ? sql`'null'::jsonb` : value;
}

/**
 * The organisation and project by slug. Publishing is the application's own path, so a private
 * project is as reachable as any other.
 */
async function projectOf(tx: Db, organizationSlug: string, projectSlug: string) {
  const [organization] = await tx
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.slug, organizationSlug));
  if (organization === undefined) {
    throw new NotFound(`No organization with slug ${organizationSlug}`);
  }
  const [project] = await tx
    .select({ id: projects.id })
    .from(projects)
    .where(and(eq(projects.organizationId, organization.id), eq(projects.slug, projectSlug)));
  if (project === undefined) {
    throw new NotFound(`No project with slug ${projectSlug} in organization ${organizationSlug}`);
  }
  return { organizationId: organization.id, projectId: project.id };
}

/** The member the change event names, who must be a current member; null when no user acts. */
async function memberActorId(
  tx: Db,
  organizationId: string,
  organizationSlug: string,
  actorId: string | null | undefined,
): Promise<string | null> {
  if (actorId == null) return null;
  const refusal = new InvalidRequest(
    `actorId: ${actorId} is not a current member of organization ${organizationSlug}`,
  );
  if (!id.safeParse(actorId).success) throw refusal;
  if (!(await isCurrentMember(tx, organizationId, actorId))) throw refusal;
  return actorId;
}

/**
 * Marks stale the latest published version of each direct dependent (`dependsOn`; not theirs, not
 * drafts). Dependents are locked in id order first, so a concurrent publish of one comes either
 * first (and its new version is marked) or after.
 */
async function markDirectDependentsStale(
  tx: Db,
  dependsOn: SQL,
  /** What was published; a component listed as its own dependency is not marked. */
  publishedId: string,
): Promise<string[]> {
  const dependents = await tx
    .select({ id: components.id, slug: components.slug })
    .from(components)
    .where(
      and(
        inArray(
          components.id,
          tx
            .select({ id: componentDependencies.componentId })
            .from(componentDependencies)
            .where(dependsOn),
        ),
        ne(components.id, publishedId),
      ),
    )
    .orderBy(asc(components.id))
    .for("no key update");
  if (dependents.length === 0) return [];
  const latest = latestPublished(tx, componentLineage, components.id, {
    id: componentVersions.id,
  }).as("latest");
  const latestVersions = tx
    .select({ id: latest.id })
    .from(components)
    .innerJoinLateral(latest, sql`true`)
    .where(
      inArray(
        components.id,
        dependents.map((dependent) => dependent.id),
      ),
    );
  const marked = await tx
    .update(componentVersions)
    .set({ healthStatus: STALE })
    .where(
      and(inArray(componentVersions.id, latestVersions), ne(componentVersions.healthStatus, STALE)),
    )
    .returning({ componentId: componentVersions.componentId });
  const markedIds = new Set(marked.map((row) => row.componentId));
  return dependents
    .filter((dependent) => markedIds.has(dependent.id))
    .map((dependent) => dependent.slug)
    .sort();
}

/** What one kind of lineage adds to the shared publishing steps. */
type PublishingKind<Snapshot extends Record<string, unknown>> = {
  /** "spec" or "component", for messages. */
  label: string;
  lineage: Lineage;
  event: "spec.published" | "component.published";
  /** The columns of a version the event's diff shows, before and after. */
  snapshot: SelectedFields;
  /** Inserts the new published version; returns its id and its snapshot. */
  insert(tx: Db, ownerId: string, version: string): Promise<{ id: string; after: Snapshot }>;
  /** The diff's `before` when the lineage had no published version yet. */
  noPrevious: Snapshot | Record<string, never>;
  /** Which dependency rows name this lineage as what a component depends on. */
  dependents(ownerId: string): SQL;
};

type Target = Publisher & { slug: string };

/**
 * The one publishing path: the new version, its change event and the dependents marked stale, in
 * one transaction. The lineage's owner row is locked first, so concurrent publishes of a lineage
 * run one after the other and the duplicate check and the event's `before` hold.
 */
async function publish<Snapshot extends Record<string, unknown>>(
  db: Db,
  kind: PublishingKind<Snapshot>,
  target: Target,
): Promise<Published> {
  const { version } = target;
  const { owners, versions, ownerOf } = kind.lineage;
  return db.transaction(async (tx) => {
    const { organizationId, projectId } = await projectOf(
      tx,
      target.organizationSlug,
      target.projectSlug,
    );
    const [owner] = await tx
      .select({ id: owners.id })
      .from(owners)
      .where(and(eq(owners.projectId, projectId), eq(owners.slug, target.slug)))
      .for("no key update");
    if (owner === undefined) {
      throw new NotFound(
        `No ${kind.label} with slug ${target.slug} in project ${target.organizationSlug}/${target.projectSlug}`,
      );
    }
    const actorId = await memberActorId(
      tx,
      organizationId,
      target.organizationSlug,
      target.actorId,
    );
    const [existing] = await tx
      .select({ status: versions.status })
      .from(versions as PgTable)
      .where(and(eq(ownerOf, owner.id), eq(versions.version, version)));
    if (existing !== undefined) {
      throw new InvalidRequest(
        `version: ${kind.label} ${target.slug} already has a version ${version} (${existing.status}); publish a new version string`,
      );
    }
    const [previous] = await latestPublished(tx, kind.lineage, owner.id, kind.snapshot);
    const created = await kind.insert(tx, owner.id, version);
    const eventId = await recordChangeEvent(tx, {
      organizationId,
      type: kind.event,
      targetId: owner.id,
      actorId,
      diff: { before: previous ?? kind.noPrevious, after: created.after },
    });
    const markedStale = await markDirectDependentsStale(tx, kind.dependents(owner.id), owner.id);
    return { id: created.id, eventId, markedStale };
  });
}

const specPublishing = (value: JsonValue): PublishingKind<{ value: JsonValue }> => ({
  label: "spec",
  lineage: specLineage,
  event: "spec.published",
  snapshot: { value: specVersions.value },
  // Spec, "Events": the diff holds the value before and after; null before the first.
  noPrevious: { value: null },
  async insert(tx, specId, version) {
    const [created] = await tx
      .insert(specVersions)
      .values({
        specId,
        version,
        status: PUBLISHED,
        value: jsonbValue(value),
        // The transaction's time: the same instant as the change event's occurred_at.
        publishedAt: sql`now()`,
      })
      .returning({ id: specVersions.id });
    assertRowReturned(created, "spec version insert");
    return { id: created.id, after: { value } };
  },
  dependents: (specId) => eq(componentDependencies.dependsOnSpecId, specId),
});

const componentState = {
  version: componentVersions.version,
  status: componentVersions.status,
  lifecycleStage: componentVersions.lifecycleStage,
  healthStatus: componentVersions.healthStatus,
};

const componentPublishing = (
  lifecycleStage: string,
  healthStatus: ComponentHealth,
): PublishingKind<Record<keyof typeof componentState, string>> => ({
  label: "component",
  lineage: componentLineage,
  event: "component.published",
  snapshot: componentState,
  noPrevious: {},
  async insert(tx, componentId, version) {
    const [created] = await tx
      .insert(componentVersions)
      .values({ componentId, version, status: PUBLISHED, lifecycleStage, healthStatus })
      .returning({ id: componentVersions.id, ...componentState });
    assertRowReturned(created, "component version insert");
    const { id, ...after } = created;
    return { id, after };
  },
  dependents: (componentId) => eq(componentDependencies.dependsOnComponentId, componentId),
});

/** Publishes a new version of a spec (`spec.published`). */
export async function publishSpecVersion(db: Db, input: SpecPublication): Promise<Published> {
  const publication = parseInput(specPublicationSchema, input);
  return publish(db, specPublishing(publication.value), {
    ...publication,
    slug: publication.specSlug,
  });
}

/** Publishes a new version of a component (`component.published`). */
export async function publishComponentVersion(
  db: Db,
  input: ComponentPublication,
): Promise<Published> {
  const publication = parseInput(componentPublicationSchema, input);
  const { lifecycleStage, healthStatus } = publication;
  return publish(db, componentPublishing(lifecycleStage, healthStatus), {
    ...publication,
    slug: publication.componentSlug,
  });
}
