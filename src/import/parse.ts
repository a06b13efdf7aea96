import { ImportError, type ImportIssue, issuesFromZod } from "./import-error.js";
import { findReferenceIssues } from "./references.js";
import { type WorkspaceDocument, workspaceDocumentSchema } from "./schema.js";

const NUL = "\u0000";
const NUL_MESSAGE = "contains a NUL character, which the database cannot store";

// Postgres text and jsonb refuse NUL; finding it here names the path instead of failing the
// transaction halfway with a driver error.
function nulCharacterIssues(value: unknown, path: readonly PropertyKey[] = []): ImportIssue[] {
  if (typeof value === "string") return value.includes(NUL) ? [{ path, message: NUL_MESSAGE }] : [];
  if (Array.isArray(value)) {
    return value.flatMap((item, index) => nulCharacterIssues(item, [...path, index]));
  }
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => [
    ...(key.includes(NUL) ? [{ path: [...path, key], message: NUL_MESSAGE }] : []),
    ...nulCharacterIssues(item, [...path, key]),
  ]);
}

/** Validates a workspace document; throws ImportError naming every JSON path at fault. */
export function parseWorkspaceDocument(input: unknown): WorkspaceDocument {
  const parsed = workspaceDocumentSchema.safeParse(input);
  if (!parsed.success) throw new ImportError(issuesFromZod(parsed.error.issues));
  const issues = [...findReferenceIssues(parsed.data), ...nulCharacterIssues(parsed.data)];
  if (issues.length > 0) throw new ImportError(issues);
  return parsed.data;
}
