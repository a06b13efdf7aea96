import { and, asc, eq } from "drizzle-orm";
import { NotFound } from "../../core/errors.js";
import { SLUG_PATTERN } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { projects } from "../../db/schema/index.js";
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
export function visibleProjectsOf(organizationId: string) {
  return and(eq(projects.organizationId, organizationId), eq(projects.visibility, "org"));
}

export async function listProjects(db: Db, organizationId: string): Promise<Project[]> {
  return db
    .select(projectColumns)
    .from(projects)
    .where(visibleProjectsOf(organizationId))
    .orderBy(asc(projects.name), asc(projects.slug));
}

/** A slug of a shape no project has is unknown without asking the database. */
export function refuseImpossibleSlug(slug: string): void {
  if (!SLUG_PATTERN.test(slug)) throw new NotFound(PROJECT_NOT_FOUND);
}

export async function getProject(
  db: Db,
  organizationId: string,
  slug: string,
): Promise<ProjectDetail> {
  refuseImpossibleSlug(slug);
  const [project] = await db
    .select({ id: projects.id, ...projectColumns })
    .from(projects)
    .where(and(visibleProjectsOf(organizationId), eq(projects.slug, slug)));
  if (project === undefined) throw new NotFound(PROJECT_NOT_FOUND);
  return project;
}

/** The id of a visible project, for the nested collections; 404 otherwise. */
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
