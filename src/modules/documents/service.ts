import { and, desc, eq, isNull, or, type SQL, sql } from "drizzle-orm";
import { NotFound } from "../../core/errors.js";
import type { Actor } from "../../core/principal.js";
import type { Db } from "../../db/client.js";
import { isoDateTimeOf, type JsonText, jsonArrayOf, organizationList } from "../../db/json-rows.js";
import { assertRowReturned } from "../../db/returned-row.js";
import { documentCategory, documents, organizations, projects } from "../../db/schema/index.js";
import { creationDiff, diffOf, isEmptyDiff, recordChangeEvent } from "../change-events/service.js";
import { visibleProjectId, visibleProjectList, visibleProjectsOf } from "../projects/service.js";
import type {
  DocumentCategory,
  DocumentLinkInput,
  DocumentPatch,
  LibraryDocument,
} from "./schemas.js";

// One message for unknown, private and foreign documents, the same as for an id that is not a
// UUID (params validation): the answer must not tell them apart.
const DOCUMENT_NOT_FOUND = "Not found";

const documentColumns = {
  id: documents.id,
  category: documents.category,
  kind: documents.kind,
  title: documents.title,
  description: documents.description,
  url: documents.url,
  filename: documents.filename,
  byteSize: documents.byteSize,
  contentType: documents.contentType,
  uploadedBy: documents.uploadedBy,
  createdAt: isoDateTimeOf(documents.createdAt),
};

/** Which library: the team-level one (no project) or a visible project's. */
export type Library = { kind: "team" } | { kind: "project"; slug: string };

export type DocumentFilter = { category?: DocumentCategory | undefined };

type DocumentFilterValues = { category: DocumentCategory | null };

// Newest first: `createdAt` descending, then the latest filed first among documents filed at
// the same instant.
const newestFirst = [desc(documents.createdAt), desc(documents.sequence)];

// `category` filters when given; null (no filter) lets every document through. Each use of a
// placeholder is a parameter of its own, so the null test names the type Postgres cannot guess.
const category = sql.placeholder("category");
const inCategory = or(
  sql`${category}::${sql.raw(documentCategory.enumName)} is null`,
  eq(documents.category, category),
);

const libraryOf = (where: SQL | undefined) =>
  jsonArrayOf<LibraryDocument>(documentColumns, {
    from: documents,
    where: and(where, inCategory),
    orderBy: newestFirst,
  });

const teamLibrary = organizationList<LibraryDocument, DocumentFilterValues>(
  "list_team_documents",
  libraryOf(and(eq(documents.organizationId, organizations.id), isNull(documents.projectId))),
);

const projectLibrary = visibleProjectList<LibraryDocument, DocumentFilterValues>(
  "list_project_documents",
  () => libraryOf(eq(documents.projectId, projects.id)),
);

/** Either library, newest first, as JSON text: one query. */
export function listDocuments(
  db: Db,
  organizationId: string,
  library: Library,
  filter: DocumentFilter,
): Promise<JsonText<LibraryDocument[]>> {
  const values = { category: filter.category ?? null };
  return library.kind === "team"
    ? teamLibrary(db, organizationId, values)
    : projectLibrary(db, organizationId, library.slug, values);
}

/** Files a link (uploads stay in the application): kind `link`, uploaded by the author. */
export async function createDocumentLink(
  db: Db,
  library: Library,
  { organizationId, authorId, traceContext }: Actor,
  input: DocumentLinkInput,
): Promise<{ id: string }> {
  const fields = {
    category: input.category,
    kind: "link" as const,
    title: input.title,
    description: input.description ?? null,
    url: input.url,
  };
  return db.transaction(async (tx) => {
    const projectId =
      library.kind === "team" ? null : await visibleProjectId(tx, organizationId, library.slug);
    const [document] = await tx
      .insert(documents)
      .values({ organizationId, projectId, ...fields, uploadedBy: authorId })
      .returning({ id: documents.id });
    assertRowReturned(document, "document insert");
    await recordChangeEvent(tx, {
      organizationId,
      type: "document.created",
      targetId: document.id,
      actorId: authorId,
      traceContext,
      diff: creationDiff(fields),
    });
    return { id: document.id };
  });
}

/**
 * Documents reachable by id: the organisation's team-level library and the libraries of its
 * visible projects. The project condition is in the query, never checked afterwards.
 */
function reachableDocument(organizationId: string, documentId: string) {
  return and(
    eq(documents.id, documentId),
    eq(documents.organizationId, organizationId),
    or(isNull(documents.projectId), visibleProjectsOf(organizationId)),
  );
}

/**
 * Edits the title and description only; the link target cannot change. Only the fields whose
 * value differs are written and listed in the `document.updated` diff; when none does, nothing
 * is written and no event is recorded (write-effects.ts).
 */
export async function updateDocument(
  db: Db,
  documentId: string,
  { organizationId, authorId, traceContext }: Actor,
  input: DocumentPatch,
): Promise<{ id: string }> {
  return db.transaction(async (tx) => {
    const [current] = await tx
      .select({ title: documents.title, description: documents.description })
      .from(documents)
      .leftJoin(projects, eq(projects.id, documents.projectId))
      .where(reachableDocument(organizationId, documentId))
      .for("no key update", { of: documents });
    if (current === undefined) throw new NotFound(DOCUMENT_NOT_FOUND);
    const diff = diffOf(current, input);
    if (isEmptyDiff(diff)) return { id: documentId };
    await tx
      .update(documents)
      .set({ ...(diff.after as DocumentPatch), updatedAt: sql`now()` })
      .where(eq(documents.id, documentId));
    await recordChangeEvent(tx, {
      organizationId,
      type: "document.updated",
      targetId: documentId,
      actorId: authorId,
      traceContext,
      diff,
    });
    return { id: documentId };
  });
}
