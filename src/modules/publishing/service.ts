import { and, asc, desc, eq, inArray, ne, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import {
  componentDependencies,
  componentHealth,
  components,
  componentVersions,
  organizations,
  projects,
  specs,
  specVersions,
} from "../../db/schema/index.js";
import { id, isStorableText, UNSTORABLE_TEXT } from "../../http/common-schemas.js";
import { InvalidRequest, NotFound } from "../../http/errors.js";
import { recordChangeEvent } from "../change-events/service.js";
import type { JsonValue } from "../specs/schemas.js";
import { isCurrentMember } from "../users/service.js";

// Component version status is free text in the application; the API shows this one as latest.
const PUBLISHED = "published";
const STALE = "stale";

export type ComponentHealth = (typeof componentHealth.enumValues)[number];
export const componentHealthStates: readonly ComponentHealth[] = componentHealth.enumValues;

export function isComponentHealth(value: string): value is ComponentHealth {
  return (componentHealthStates as readonly string[]).includes(value);
}

type Publisher = {
  organizationSlug: string;
  projectSlug: string;
  /** The version string; a spec or component never has two versions with the same one. */
  version: string;
  /** The member the change event names; null (or left out) when no user acts, as in the CLI. */
  actorId?: string | null;
};

export type SpecPublication = Publisher & { specSlug: string; value: JsonValue };

/** A publish always creates a `published` version, so there is no status to choose. */
export type ComponentPublication = Publisher & {
  componentSlug: string;
  lifecycleStage: string;
  healthStatus: ComponentHealth;
};

export type Published = {
  /** The new version's id. */
  id: string;
  /** The recorded change event's id (the webhook payload `id`). */
  eventId: number;
  /** Slugs of the direct dependents whose latest published version this publish turned stale. */
  markedStale: string[];
};

function requireLabel(field: string, value: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new InvalidRequest(`${field}: must not be empty`);
  }
  if (value.trim() !== value) {
    throw new InvalidRequest(`${field}: must not start or end with whitespace`);
  }
  if (!isStorableText(value)) throw new InvalidRequest(`${field}: ${UNSTORABLE_TEXT}`);
  return value;
}

/** What jsonb can hold: finite numbers, and strings and keys without NUL or lone surrogates. */
function isStorableJson(value: unknown): boolean {
  if (value === null || typeof value === "boolean") return true;
  if (typeof value === "string") return isStorableText(value);
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isStorableJson);
  if (typeof value === "object") {
    return Object.entries(value).every(
      ([key, item]) => isStorableText(key) && isStorableJson(item),
    );
  }
  return false;
}

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

async function actorOf(
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
 * Marks stale the latest published version of every component that depends directly on what was
 * published (`dependsOn`); dependents of dependents are left alone, and so are drafts. The
 * dependents are locked in id order first, as a publish of one of them locks its row, so a
 * concurrent publish of a dependent either comes first (and its new version is marked) or after.
 */
async function markDirectDependentsStale(
  tx: Db,
  dependsOn: SQL,
  publishedComponentId?: string,
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
        // A component listed as its own dependency does not make its new version stale.
        publishedComponentId === undefined ? undefined : ne(components.id, publishedComponentId),
      ),
    )
    .orderBy(asc(components.id))
    .for("no key update");
  if (dependents.length === 0) return [];
  const latestVersions = tx
    .selectDistinctOn([componentVersions.componentId], { id: componentVersions.id })
    .from(componentVersions)
    .where(
      and(
        inArray(
          componentVersions.componentId,
          dependents.map((dependent) => dependent.id),
        ),
        eq(componentVersions.status, PUBLISHED),
      ),
    )
    .orderBy(componentVersions.componentId, desc(componentVersions.sequence));
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

function refuseExistingVersion(kind: string, slug: string, version: string, status: string) {
  return new InvalidRequest(
    `version: ${kind} ${slug} already has a version ${version} (${status}); publish a new version string`,
  );
}

/**
 * Publishes a new version of a spec: in one transaction, the published version, its
 * `spec.published` change event (the webhook outbox) and the direct dependents marked stale.
 * The spec row is locked first, so concurrent publishes of one spec run one after the other:
 * the duplicate check holds, and the event's `before` is the latest at that moment.
 */
export async function publishSpecVersion(db: Db, input: SpecPublication): Promise<Published> {
  const version = requireLabel("version", input.version);
  if (!isStorableJson(input.value)) {
    throw new InvalidRequest(
      `value: must be a JSON value with finite numbers, and strings that ${UNSTORABLE_TEXT}`,
    );
  }
  const value = input.value;
  return db.transaction(async (tx) => {
    const { organizationId, projectId } = await projectOf(
      tx,
      input.organizationSlug,
      input.projectSlug,
    );
    const [spec] = await tx
      .select({ id: specs.id })
      .from(specs)
      .where(and(eq(specs.projectId, projectId), eq(specs.slug, input.specSlug)))
      .for("no key update");
    if (spec === undefined) {
      throw new NotFound(
        `No spec with slug ${input.specSlug} in project ${input.organizationSlug}/${input.projectSlug}`,
      );
    }
    const actorId = await actorOf(tx, organizationId, input.organizationSlug, input.actorId);
    const [existing] = await tx
      .select({ status: specVersions.status })
      .from(specVersions)
      .where(and(eq(specVersions.specId, spec.id), eq(specVersions.version, version)));
    if (existing !== undefined) {
      throw refuseExistingVersion("spec", input.specSlug, version, existing.status);
    }
    const [previous] = await tx
      .select({ version: specVersions.version, value: specVersions.value })
      .from(specVersions)
      .where(and(eq(specVersions.specId, spec.id), eq(specVersions.status, "published")))
      .orderBy(desc(specVersions.sequence))
      .limit(1);
    const [created] = await tx
      .insert(specVersions)
      .values({
        specId: spec.id,
        version,
        status: "published",
        value: jsonbValue(value),
        // The transaction's time: the same instant as the change event's occurred_at.
        publishedAt: sql`now()`,
      })
      .returning({ id: specVersions.id });
    if (created === undefined) throw new Error("spec version insert returned no row");
    const eventId = await recordChangeEvent(tx, {
      organizationId,
      type: "spec.published",
      targetId: spec.id,
      actorId,
      diff: {
        // Spec, "Events": the diff holds the value before and after; null before the first.
        before: { value: previous === undefined ? null : previous.value },
        after: { value },
      },
    });
    const markedStale = await markDirectDependentsStale(
      tx,
      eq(componentDependencies.dependsOnSpecId, spec.id),
    );
    return { id: created.id, eventId, markedStale };
  });
}

/**
 * Publishes a new version of a component: in one transaction, the published version, its
 * `component.published` change event and the direct dependents marked stale. The component row
 * is locked first, as for specs.
 */
export async function publishComponentVersion(
  db: Db,
  input: ComponentPublication,
): Promise<Published> {
  const version = requireLabel("version", input.version);
  const lifecycleStage = requireLabel("lifecycleStage", input.lifecycleStage);
  if (!isComponentHealth(input.healthStatus)) {
    throw new InvalidRequest(`healthStatus: must be one of ${componentHealthStates.join(", ")}`);
  }
  const healthStatus = input.healthStatus;
  return db.transaction(async (tx) => {
    const { organizationId, projectId } = await projectOf(
      tx,
      input.organizationSlug,
      input.projectSlug,
    );
    const [component] = await tx
      .select({ id: components.id })
      .from(components)
      .where(and(eq(components.projectId, projectId), eq(components.slug, input.componentSlug)))
      .for("no key update");
    if (component === undefined) {
      throw new NotFound(
        `No component with slug ${input.componentSlug} in project ${input.organizationSlug}/${input.projectSlug}`,
      );
    }
    const actorId = await actorOf(tx, organizationId, input.organizationSlug, input.actorId);
    const [existing] = await tx
      .select({ status: componentVersions.status })
      .from(componentVersions)
      .where(
        and(
          eq(componentVersions.componentId, component.id),
          eq(componentVersions.version, version),
        ),
      );
    if (existing !== undefined) {
      throw refuseExistingVersion("component", input.componentSlug, version, existing.status);
    }
    const stateColumns = {
      version: componentVersions.version,
      status: componentVersions.status,
      lifecycleStage: componentVersions.lifecycleStage,
      healthStatus: componentVersions.healthStatus,
    };
    const [previous] = await tx
      .select(stateColumns)
      .from(componentVersions)
      .where(
        and(
          eq(componentVersions.componentId, component.id),
          eq(componentVersions.status, PUBLISHED),
        ),
      )
      .orderBy(desc(componentVersions.sequence))
      .limit(1);
    const [created] = await tx
      .insert(componentVersions)
      .values({
        componentId: component.id,
        version,
        status: PUBLISHED,
        lifecycleStage,
        healthStatus,
      })
      .returning({ id: componentVersions.id, ...stateColumns });
    if (created === undefined) throw new Error("component version insert returned no row");
    const { id: versionId, ...after } = created;
    const eventId = await recordChangeEvent(tx, {
      organizationId,
      type: "component.published",
      targetId: component.id,
      actorId,
      diff: { before: previous ?? {}, after },
    });
    const markedStale = await markDirectDependentsStale(
      tx,
      eq(componentDependencies.dependsOnComponentId, component.id),
      component.id,
    );
    return { id: versionId, eventId, markedStale };
  });
}
