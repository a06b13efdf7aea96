import { and, asc, eq, type Placeholder, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { NotFound } from "../../core/errors.js";
import { SLUG_PATTERN } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { type JsonText, jsonArrayOf, organizationList } from "../../db/json-rows.js";
import { prepared } from "../../db/prepared.js";
import { organizations, projects } from "../../db/schema/index.js";
import type { Project, ProjectDetail } from "./schemas.js";

// One message for unknown, private and foreign projects: the answer must not tell them apart.
export const PROJECT_NOT_FOUND = "Project not found";

const projectColumns = {
  slug: projects.slug,
  name: projects.name,
  status: projects.status,
  visibility: projects.visibility,
  description: projects.description,
  startDate: projects.startDate,
  targetDate: projects.targetDate,
};

/** Projects the API may see: in the organisation and not private. */
export function visibleProjectsOf(organizationId: string | Placeholder | SQLWrapper) {
  return and(eq(projects.organizationId, organizationId), eq(projects.visibility, "org"));
}

/** The visible project a nested route names, by the placeholders `organizationId` and `slug`. */
const visibleProjectBySlug = and(
  visibleProjectsOf(sql.placeholder("organizationId")),
  eq(projects.slug, sql.placeholder("slug")),
);

/**
 * A list of a visible project's, read by one named statement over the project's row (by the
 * placeholders `organizationId` and `slug`) as `list`'s JSON text: no row means no such visible
 * project (404). `list` is built per database handle; `values` are its own placeholders.
 */
export function visibleProjectList<T, V extends object = object>(
  name: string,
  list: (db: Db) => SQL<JsonText<T[]>>,
) {
  const statement = prepared((db) =>
    db
      .select({ list: list(db) })
      .from(projects)
      .where(visibleProjectBySlug)
      .prepare(name),
  );
  return async (
    db: Db,
    organizationId: string,
    slug: string,
    values?: V,
  ): Promise<JsonText<T[]>> => {
    refuseImpossibleSlug(slug);
    const [project] = await statement(db).execute({ organizationId, slug, ...values });
    if (project === undefined) throw new NotFound(PROJECT_NOT_FOUND);
    return project.list;
  };
}

/** The organisation's visible projects by name, as JSON text. */
export const listProjects = organizationList<Project>(
  "list_projects",
  jsonArrayOf<Project>(projectColumns, {
    from: projects,
    where: visibleProjectsOf(organizations.id),
    orderBy: [asc(projects.name), asc(projects.slug)],
  }),
);

/** A slug of a shape no project has is unknown without asking the database. */
export function refuseImpossibleSlug(slug: string): void {
  if (!SLUG_PATTERN.test(slug)) throw new NotFound(PROJECT_NOT_FOUND);
}

const projectDetail = prepared((db) =>
  db
    .select({ id: projects.id, ...projectColumns })
    .from(projects)
    .where(visibleProjectBySlug)
    .prepare("get_project"),
);

export async function getProject(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<ProjectDetail> {
  refuseImpossibleSlug(slug);
  const [project] = await projectDetail(db).execute({ organizationId, slug });
  if (project === undefined) throw new NotFound(PROJECT_NOT_FOUND);
  return project;
}

/** The id of a visible project, for the writes into its collections; 404 otherwise. */
export async function visibleProjectId(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<string> {
  refuseImpossibleSlug(slug);
  const [project] = await db
    .select({ id: projects.id })
    .from(projects)
    .where(and(visibleProjectsOf(organizationId), eq(projects.slug, slug)));
  if (project === undefined) throw new NotFound(PROJECT_NOT_FOUND);
  return project.id;
}
