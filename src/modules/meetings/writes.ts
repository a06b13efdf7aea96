import { and, eq, sql } from "drizzle-orm";
import { InvalidRequest, NotFound } from "../../core/errors.js";
import type { Actor } from "../../core/principal.js";
import { toIsoDateTime } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { assertRowReturned } from "../../db/returned-row.js";
import { meetings, projects, transcripts } from "../../db/schema/index.js";
import { sameRichText } from "../../richtext/compose.js";
import type { MarkdownPool } from "../../richtext/markdown-pool.js";
import { emptyRichText, type RichTextDoc } from "../../richtext/types.js";
import { diffOf, isEmptyDiff, recordChangeEvent } from "../change-events/service.js";
import { appendBody, convertMarkdown, type StoredBody } from "../rich-text/bodies.js";
import { MEETING_NOT_FOUND, meetingProject, visibleMeetingsOf } from "./reads.js";
import type { MinutesInput, MinutesWritten, NotesWritten } from "./schemas.js";

/** The visible meeting, locked for this transaction's write; 404 otherwise. */
async function lockVisibleMeeting(tx: Db, organizationId: string, meetingId: string) {
  const [meeting] = await tx
    .select({
      id: meetings.id,
      minutes: meetings.minutes,
      minutesText: meetings.minutesText,
      minutesUpdatedAt: meetings.minutesUpdatedAt,
    })
    .from(meetings)
    .leftJoin(projects, meetingProject)
    .where(and(eq(meetings.id, meetingId), visibleMeetingsOf(organizationId)))
    .for("no key update", { of: meetings });
  if (meeting === undefined) throw new NotFound(MEETING_NOT_FOUND);
  return meeting;
}

/**
 * `POST /meetings/{id}/minutes`. Minutes equal to the stored ones write nothing and record no
 * event (write-effects.ts); otherwise the event's diff holds `minutesText` when the text changed.
 */
export async function writeMinutes(
  db: Db,
  markdown: MarkdownPool,
  meetingId: string,
  { organizationId, authorId, traceContext }: Actor,
  input: MinutesInput,
): Promise<MinutesWritten> {
  // Converted before the transaction opens, so the meeting stays unlocked meanwhile.
  const added = await convertMarkdown(markdown, input.markdown);
  return db.transaction(async (tx) => {
    const meeting = await lockVisibleMeeting(tx, organizationId, meetingId);
    const current: StoredBody = {
      body: (meeting.minutes as RichTextDoc | null) ?? emptyRichText(),
      text: meeting.minutesText,
    };
    const { body: minutes, text: minutesText } =
      input.mode === "append" ? appendBody(current, added, markdown.maxBytes) : added;
    if (sameRichText(minutes, current.body)) {
      return { id: meeting.id, updatedAt: toIsoDateTime(meeting.minutesUpdatedAt) };
    }
    const [updated] = await tx
      .update(meetings)
      .set({ minutes, minutesText, minutesUpdatedAt: sql`now()`, minutesUpdatedBy: authorId })
      .where(eq(meetings.id, meeting.id))
      .returning({ minutesUpdatedAt: meetings.minutesUpdatedAt });
    assertRowReturned(updated, "minutes update");
    await recordChangeEvent(tx, {
      organizationId,
      type: "meeting.minutes_updated",
      targetId: meeting.id,
      actorId: authorId,
      traceContext,
      diff: diffOf({ minutesText: current.text }, { minutesText }),
    });
    return { id: meeting.id, updatedAt: toIsoDateTime(updated.minutesUpdatedAt) };
  });
}

/** Written through the notes endpoint; transcript jobs never overwrite such notes. */
export const HUMAN_NOTES = "human";
/** The notes status once notes are written, by a member or a transcript job. */
export const NOTES_READY = "ready";

/** The meeting's transcript, locked for this write; 400 when the meeting has none. */
async function lockTranscriptOf(tx: Db, meetingId: string) {
  const [transcript] = await tx
    .select({
      id: transcripts.id,
      notes: transcripts.notes,
      notesSource: transcripts.notesSource,
      notesStatus: transcripts.notesStatus,
    })
    .from(transcripts)
    .where(eq(transcripts.meetingId, meetingId))
    .for("update");
  if (transcript === undefined) {
    throw new InvalidRequest(
      "This meeting has no transcript: notes can only be written to the transcript of a recorded meeting",
    );
  }
  return transcript;
}

/**
 * `POST /meetings/{id}/notes`. The transcript row is locked so a concurrent transcript job sees
 * these notes as human-authored, or runs first and is replaced. Unchanged human notes write
 * nothing and record no event (write-effects.ts).
 */
export async function writeNotes(
  db: Db,
  meetingId: string,
  { organizationId, authorId, traceContext }: Actor,
  notes: string,
): Promise<NotesWritten> {
  return db.transaction(async (tx) => {
    const meeting = await lockVisibleMeeting(tx, organizationId, meetingId);
    const transcript = await lockTranscriptOf(tx, meeting.id);
    const { id: transcriptId, ...stored } = transcript;
    const diff = diffOf(stored, { notes, notesSource: HUMAN_NOTES, notesStatus: NOTES_READY });
    if (isEmptyDiff(diff)) return { transcriptId };
    await tx
      .update(transcripts)
      .set({
        notes,
        notesSource: HUMAN_NOTES,
        notesStatus: NOTES_READY,
        notesUpdatedBy: authorId,
        updatedAt: sql`now()`,
      })
      .where(eq(transcripts.id, transcriptId));
    await recordChangeEvent(tx, {
      organizationId,
      type: "meeting.notes_updated",
      targetId: meeting.id,
      actorId: authorId,
      traceContext,
      diff,
    });
    return { transcriptId };
  });
}
