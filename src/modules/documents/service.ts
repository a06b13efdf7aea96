import { and, desc, eq, isNull, or, type SQL, sql } from "drizzle-orm";
import { NotFound } from "../../core/errors.js";
import type { Actor } from "../../core/principal.js";
import { toIsoDateTime } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { documents, projects } from "../../db/schema/index.js";
import { creationDiff, diffOf, isEmptyDiff, recordChangeEvent } from "../change-events/service.js";
import { visibleProjectId, visibleProjectsOf } from "../projects/service.js";
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

/** Files a link (uploads stay in the application): kind `link`, uploaded by the author. */
export async function createDocumentLink(
  db: Db,
  library: Library,
  { organizationId, authorId }: Actor,
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

/**
 * Edits the title and description only; the link target cannot change. Only the fields whose
 * value differs are written and listed in the `document.updated` diff; when none does, nothing
 * is written and no event is recorded (write-effects.ts).
 */
export async function updateDocument(
  db: Db,
  documentId: string,
  { organizationId, authorId }: Actor,
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
      diff,
    });
    return { id: documentId };
  });
}
