import { and, desc, eq, isNull, or, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { documents, projects } from "../../db/schema/index.js";
import { toIsoDateTime } from "../../http/common-schemas.js";
import { NotFound } from "../../http/errors.js";
import { creationDiff, diffOf, recordChangeEvent } from "../change-events/service.js";
import { visibleProjectId, visibleProjectsOf } from "../projects/service.js";
import type {
  DocumentCategory,
  DocumentLinkInput,
  DocumentPatch,
  LibraryDocument,
} from "./schemas.js";

// One message for unknown, private and foreign documents, the same as for an id that is not a
// UUID (params validation): the answer must not tell them apart.
export const DOCUMENT_NOT_FOUND = "Not found";

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
  createdAt: documents.createdAt,
};

/** Which library: the team-level one (no project) or a visible project's. */
export type Library = { kind: "team" } | { kind: "project"; slug: string };

export type DocumentFilter = { category?: DocumentCategory | undefined };

/**
 * Newest first: `createdAt` descending, then the latest filed first among documents filed at
 * the same instant. One query for the team library; two (the project, then its documents) for
 * a project library.
 */
export async function listDocuments(
  db: Db,
  organizationId: string,
  library: Library,
  filter: DocumentFilter,
): Promise<LibraryDocument[]> {
  const projectId =
    library.kind === "team" ? null : await visibleProjectId(db, organizationId, library.slug);
  const conditions: SQL[] = [
    eq(documents.organizationId, organizationId),
    projectId === null ? isNull(documents.projectId) : eq(documents.projectId, projectId),
  ];
  if (filter.category !== undefined) conditions.push(eq(documents.category, filter.category));
  const rows = await db
    .select(documentColumns)
    .from(documents)
    .where(and(...conditions))
    .orderBy(desc(documents.createdAt), desc(documents.sequence));
  return rows.map((row) => ({ ...row, createdAt: toIsoDateTime(row.createdAt) }));
}

export type DocumentWrite<T> = {
  organizationId: string;
  authorId: string;
  input: T;
};

/** Files a link (uploads stay in the application): kind `link`, uploaded by the author. */
export async function createDocumentLink(
  db: Db,
  library: Library,
  { organizationId, authorId, input }: DocumentWrite<DocumentLinkInput>,
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
    if (document === undefined) throw new Error("document insert returned no row");
    await recordChangeEvent(tx, {
      organizationId,
      type: "document.created",
      targetId: document.id,
      actorId: authorId,
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

type EditableFields = { title: string; description: string | null };

/** The fields sent whose value differs from the stored one. */
function changedFields(current: EditableFields, input: DocumentPatch): Partial<EditableFields> {
  const changes: Partial<EditableFields> = {};
  if (input.title !== undefined && input.title !== current.title) changes.title = input.title;
  if (input.description !== undefined && input.description !== current.description) {
    changes.description = input.description;
  }
  return changes;
}

/**
 * Edits the title and description only; the link target cannot change. Every accepted PATCH
 * records one `document.updated` event (issue 4: one per successful write), with an empty diff
 * when nothing changed.
 */
export async function updateDocument(
  db: Db,
  documentId: string,
  { organizationId, authorId, input }: DocumentWrite<DocumentPatch>,
): Promise<{ id: string }> {
  return db.transaction(async (tx) => {
    const [current] = await tx
      .select({ title: documents.title, description: documents.description })
      .from(documents)
      .leftJoin(projects, eq(projects.id, documents.projectId))
      .where(reachableDocument(organizationId, documentId))
      .for("no key update", { of: documents });
    if (current === undefined) throw new NotFound(DOCUMENT_NOT_FOUND);
    const changes = changedFields(current, input);
    // Documents have no `updatedBy`, so a no-op edit leaves the row as it is: the event alone
    // says who sent it, and `updatedAt` keeps meaning "the link last changed".
    if (Object.keys(changes).length > 0) {
      await tx
        .update(documents)
        .set({ ...changes, updatedAt: sql`now()` })
        .where(eq(documents.id, documentId));
    }
    await recordChangeEvent(tx, {
      organizationId,
      type: "document.updated",
      targetId: documentId,
      actorId: authorId,
      diff: diffOf(current, { ...current, ...changes }),
    });
    return { id: documentId };
  });
}
