import { formatJsonPath, type ImportIssue } from "./import-error.js";
import type { ComponentInput, ProjectInput, TaskInput, WorkspaceDocument } from "./schema.js";

// Rules that span objects (uniqueness, references), checked once the shapes are valid.

type JsonPath = readonly PropertyKey[];
type DependencyReference = { kind: "spec" | "component"; slug: string };

/** `spec:SLUG` or `component:SLUG`; the schema has already checked the shape. */
export function parseDependencyReference(reference: string): DependencyReference {
  const separator = reference.indexOf(":");
  const kind = reference.slice(0, separator);
  return { kind: kind === "spec" ? "spec" : "component", slug: reference.slice(separator + 1) };
}

function duplicateIssues(
  keys: readonly string[],
  pathOf: (index: number) => JsonPath,
  what: string,
): ImportIssue[] {
  const firstIndexOf = new Map<string, number>();
  return keys.flatMap((key, index) => {
    const first = firstIndexOf.get(key);
    if (first === undefined) {
      firstIndexOf.set(key, index);
      return [];
    }
    const message = `duplicate ${what} ${key} (also at ${formatJsonPath(pathOf(first))})`;
    return [{ path: pathOf(index), message }];
  });
}

function versionIssues(
  lineages: readonly { versions: readonly { version: string }[] }[],
  path: JsonPath,
): ImportIssue[] {
  return lineages.flatMap((lineage, index) =>
    duplicateIssues(
      lineage.versions.map((version) => version.version),
      (versionIndex) => [...path, index, "versions", versionIndex, "version"],
      "version",
    ),
  );
}

function dependencyProblem(
  reference: DependencyReference,
  component: ComponentInput,
  project: ProjectInput,
): string | null {
  if (reference.kind === "spec") {
    const known = project.specs.some((spec) => spec.slug === reference.slug);
    return known ? null : `no spec ${reference.slug} in project ${project.slug}`;
  }
  if (reference.slug === component.slug) return "a component cannot depend on itself";
  const known = project.components.some((other) => other.slug === reference.slug);
  return known ? null : `no component ${reference.slug} in project ${project.slug}`;
}

function dependencyIssues(project: ProjectInput, path: JsonPath): ImportIssue[] {
  return project.components.flatMap((component, index) => {
    const dependsOnPath = [...path, "components", index, "dependsOn"];
    const unresolved = component.dependsOn.flatMap((reference, referenceIndex) => {
      const problem = dependencyProblem(parseDependencyReference(reference), component, project);
      return problem === null
        ? []
        : [{ path: [...dependsOnPath, referenceIndex], message: problem }];
    });
    const repeated = duplicateIssues(
      component.dependsOn,
      (referenceIndex) => [...dependsOnPath, referenceIndex],
      "dependency",
    );
    return [...unresolved, ...repeated];
  });
}

function assigneeIssues(
  tasks: readonly TaskInput[],
  path: JsonPath,
  userEmails: ReadonlySet<string>,
): ImportIssue[] {
  return tasks.flatMap((task, index) => {
    const email = task.assignee_email;
    if (email == null || userEmails.has(email.toLowerCase())) return [];
    const message = `${email} is not one of the document's users`;
    return [{ path: [...path, "tasks", index, "assignee_email"], message }];
  });
}

function projectIssues(
  project: ProjectInput,
  path: JsonPath,
  userEmails: ReadonlySet<string>,
): ImportIssue[] {
  return [
    ...duplicateIssues(
      project.specs.map((spec) => spec.slug),
      (index) => [...path, "specs", index, "slug"],
      "spec slug",
    ),
    ...duplicateIssues(
      project.components.map((component) => component.slug),
      (index) => [...path, "components", index, "slug"],
      "component slug",
    ),
    ...versionIssues(project.specs, [...path, "specs"]),
    ...versionIssues(project.components, [...path, "components"]),
    ...dependencyIssues(project, path),
    ...assigneeIssues(project.tasks, path, userEmails),
  ];
}

export function findReferenceIssues(document: WorkspaceDocument): ImportIssue[] {
  const userEmails = document.users.map((user) => user.email.toLowerCase());
  const knownEmails = new Set(userEmails);
  return [
    ...duplicateIssues(userEmails, (index) => ["users", index, "email"], "email"),
    ...duplicateIssues(
      document.projects.map((project) => project.slug),
      (index) => ["projects", index, "slug"],
      "project slug",
    ),
    ...document.projects.flatMap((project, index) =>
      projectIssues(project, ["projects", index], knownEmails),
    ),
  ];
}
