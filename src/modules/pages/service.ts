import { and, desc, eq, isNull, notInArray, type Placeholder, sql } from "drizzle-orm";
import { InvalidRequest, NotFound } from "../../core/errors.js";
import type { Actor } from "../../core/principal.js";
import { toIsoDateTime } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { isoDateTimeOf, type JsonText } from "../../db/json-rows.js";
import { prepared } from "../../db/prepared.js";
import { assertRowReturned } from "../../db/returned-row.js";
import { pageRevisions, pages, projects } from "../../db/schema/index.js";
import { sameRichText } from "../../richtext/compose.js";
import type { MarkdownPool } from "../../richtext/markdown-pool.js";
import { emptyRichText, type RichTextDoc } from "../../richtext/types.js";
import { creationDiff, diffOf, recordChangeEvent } from "../change-events/service.js";
import {
  PROJECT_NOT_FOUND,
  refuseImpossibleSlug,
  visibleProjectList,
  visibleProjectsOf,
} from "../projects/service.js";
import { appendBody, convertMarkdown, type StoredBody } from "../rich-text/bodies.js";
import type {
  CreatedPage,
  CreatePageInput,
  Page,
  PageSummary,
  UpdatedPage,
  UpdatePageInput,
} from "./schemas.js";

// One message for unknown, private and foreign pages, the same as for an id that is not a
// UUID (params validation): the answer must not tell them apart.
const PAGE_NOT_FOUND = "Not found";

// The tree in depth-first pre-order, written as JSON by Postgres. Each page's path is the list of
// its ancestors' and its own sort keys (position, title, creation order), and a path sorts right
// after its parent's. A page whose parent is outside the project is shown at the top. Only a
// parent cycle (never written by this service) leaves pages unreached; they are listed last.
export const listPages = visibleProjectList<PageSummary>(
  "list_pages",
  () => sql<JsonText<PageSummary[]>>`(
        with recursive project_pages as (
          select id, parent_id, title, position, sequence, updated_at
          from pages where pages.project_id = projects.id
        ), walk as (
          select page.*, array[row(page.position, page.title, page.sequence)] as path
          from project_pages page
          where page.parent_id is null
            or not exists (select from project_pages parent where parent.id = page.parent_id)
          union all
          select child.*, walk.path || row(child.position, child.title, child.sequence)
          from project_pages child join walk on child.parent_id = walk.id
        ), tree as (
          select walk.*, false as unreached from walk
          union all
          select page.*, array[row(page.position, page.title, page.sequence)], true
          from project_pages page where page.id not in (select id from walk)
        )
        select coalesce(array_to_json(array_agg(r))::text, '[]') from (
          select tree.id, tree.parent_id as "parentId", tree.title, tree.position,
            ${isoDateTimeOf(sql`tree.updated_at`)} as "updatedAt"
          from tree order by tree.unreached, tree.path
        ) r
      )`,
);

/** Pages of visible projects only: the project condition is part of every page lookup. */
function visiblePage(organizationId: string | Placeholder, pageId: string | Placeholder) {
  return and(eq(pages.id, pageId), visibleProjectsOf(organizationId));
}

const pageById = prepared((db) =>
  db
    .select({
      id: pages.id,
      parentId: pages.parentId,
      title: pages.title,
      text: pages.text,
      updatedAt: pages.updatedAt,
      updatedBy: pages.updatedBy,
    })
    .from(pages)
    .innerJoin(projects, eq(projects.id, pages.projectId))
    .where(visiblePage(sql.placeholder("organizationId"), sql.placeholder("pageId")))
    .prepare("get_page"),
);

export async function getPage(db: Db, organizationId: string, pageId: string): Promise<Page> {
  const [page] = await pageById(db).execute({ organizationId, pageId });
  if (page === undefined) throw new NotFound(PAGE_NOT_FOUND);
  return {
    id: page.id,
    parentId: page.parentId,
    title: page.title,
    text: page.text,
    updatedAt: toIsoDateTime(page.updatedAt),
    updatedBy: page.updatedBy,
  };
}

/** What page writes need besides the database: the markdown pool and the revisions kept. */
export type PageWriting = { markdown: MarkdownPool; revisionsKept: number };

export async function createPage(
  db: Db,
  writing: PageWriting,
  slug: string,
  { organizationId, authorId, traceContext }: Actor,
  input: CreatePageInput,
): Promise<CreatedPage> {
  const parentId = input.parent_page_id ?? null;
  refuseImpossibleSlug(slug);
  // Converted before the transaction opens, so no lock waits on the conversion.
  const { body, text }: StoredBody =
    input.markdown === undefined
      ? { body: emptyRichText(), text: "" }
      : await convertMarkdown(writing.markdown, input.markdown);
  return db.transaction(async (tx) => {
    // Locking the project row serialises page creation within the project, so two pages
    // created at once cannot take the same last position. `no key update` leaves the
    // foreign-key locks of other inserts (tasks, documents) unblocked.
    const [project] = await tx
      .select({ id: projects.id })
      .from(projects)
      .where(and(visibleProjectsOf(organizationId), eq(projects.slug, slug)))
      .for("no key update");
    if (project === undefined) throw new NotFound(PROJECT_NOT_FOUND);
    if (parentId !== null) {
      const [parent] = await tx
        .select({ id: pages.id })
        .from(pages)
        .where(and(eq(pages.id, parentId), eq(pages.projectId, project.id)));
      if (parent === undefined) {
        throw new InvalidRequest("parent_page_id: must be a page of this project");
      }
    }
    const siblingsOf =
      parentId === null
        ? and(eq(pages.projectId, project.id), isNull(pages.parentId))
        : and(eq(pages.projectId, project.id), eq(pages.parentId, parentId));
    const [last] = await tx
      .select({ next: sql<number>`coalesce(max(${pages.position}) + 1, 0)::int` })
      .from(pages)
      .where(siblingsOf);
    const [page] = await tx
      .insert(pages)
      .values({
        projectId: project.id,
        parentId,
        title: input.title,
        position: last?.next ?? 0,
        body,
        text,
        createdBy: authorId,
        updatedBy: authorId,
      })
      .returning({ id: pages.id, title: pages.title });
    assertRowReturned(page, "page insert");
    await tx.insert(pageRevisions).values({ pageId: page.id, title: input.title, body, authorId });
    await recordChangeEvent(tx, {
      organizationId,
      type: "page.created",
      targetId: page.id,
      actorId: authorId,
      traceContext,
      diff: creationDiff({ title: input.title, parentId, text }),
    });
    return page;
  });
}

function editedBody(
  current: StoredBody,
  added: StoredBody | undefined,
  input: UpdatePageInput,
  maxBytes: number,
): StoredBody {
  if (added === undefined) return current;
  return input.mode === "append" ? appendBody(current, added, maxBytes) : added;
}

/** Keeps the page's newest `kept` revisions; run by the write that adds one. */
async function pruneRevisions(tx: Db, pageId: string, kept: number): Promise<void> {
  const newest = tx
    .select({ id: pageRevisions.id })
    .from(pageRevisions)
    .where(eq(pageRevisions.pageId, pageId))
    .orderBy(desc(pageRevisions.sequence))
    .limit(kept);
  await tx
    .delete(pageRevisions)
    .where(and(eq(pageRevisions.pageId, pageId), notInArray(pageRevisions.id, newest)));
}

/**
 * Applies the fields sent, with a revision (PAGE_REVISIONS_KEPT) and a `page.updated` event; a
 * page that comes out as stored writes nothing (write-effects.ts). The markdown converts before
 * the transaction, so the page stays unlocked meanwhile.
 */
export async function updatePage(
  db: Db,
  writing: PageWriting,
  pageId: string,
  { organizationId, authorId, traceContext }: Actor,
  input: UpdatePageInput,
): Promise<UpdatedPage> {
  // Converted before the transaction opens, so the page stays unlocked meanwhile.
  const added =
    input.markdown === undefined
      ? undefined
      : await convertMarkdown(writing.markdown, input.markdown);
  return db.transaction(async (tx) => {
    const [current] = await tx
      .select({
        title: pages.title,
        body: pages.body,
        text: pages.text,
        updatedAt: pages.updatedAt,
      })
      .from(pages)
      .innerJoin(projects, eq(projects.id, pages.projectId))
      .where(visiblePage(organizationId, pageId))
      .for("no key update", { of: pages });
    if (current === undefined) throw new NotFound(PAGE_NOT_FOUND);
    const stored: StoredBody = { body: current.body as RichTextDoc, text: current.text };
    const title = input.title ?? current.title;
    const { body, text } = editedBody(stored, added, input, writing.markdown.maxBytes);
    if (title === current.title && sameRichText(body, stored.body)) {
      return { id: pageId, updatedAt: toIsoDateTime(current.updatedAt) };
    }
    const [page] = await tx
      .update(pages)
      .set({ title, body, text, updatedAt: sql`now()`, updatedBy: authorId })
      .where(eq(pages.id, pageId))
      .returning({ id: pages.id, updatedAt: pages.updatedAt });
    assertRowReturned(page, "page update");
    await tx.insert(pageRevisions).values({ pageId, title, body, authorId });
    await pruneRevisions(tx, pageId, writing.revisionsKept);
    await recordChangeEvent(tx, {
      organizationId,
      type: "page.updated",
      targetId: pageId,
      actorId: authorId,
      traceContext,
      diff: diffOf({ title: current.title, text: current.text }, { title, text }),
    });
    return { id: page.id, updatedAt: toIsoDateTime(page.updatedAt) };
  });
}
