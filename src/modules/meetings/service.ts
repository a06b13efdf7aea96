import { and, asc, desc, eq, gte, isNull, lt, lte, or, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { meetings, projects, transcripts } from "../../db/schema/index.js";
import { toIsoDateTime } from "../../http/common-schemas.js";
import { InvalidRequest, NotFound } from "../../http/errors.js";
import { appendRichText } from "../../richtext/compose.js";
import { markdownToRichText } from "../../richtext/markdown.js";
import { richTextToPlainText } from "../../richtext/plain-text.js";
import type { RichTextDoc } from "../../richtext/types.js";
import { diffOf, recordChangeEvent } from "../change-events/service.js";
import { visibleProjectId, visibleProjectsOf } from "../projects/service.js";
import type {
  Meeting,
  MeetingSummary,
  MinutesInput,
  MinutesWritten,
  NotesWritten,
  Transcript,
} from "./schemas.js";
import type { StartsAtRange } from "./starts-at-range.js";

// One body for unknown, restricted, private-project and foreign meetings: the answer must not
// tell them apart, nor from an id that is not a UUID (refused by the params schema, which
// answers NotFound's default message too).
export const MEETING_NOT_FOUND = new NotFound().message;

/** Characters (Unicode code points, as Postgres counts them) the transcript endpoint returns. */
export const TRANSCRIPT_TEXT_LIMIT = 200_000;

/**
 * Meetings the API may see: in the organisation, audience `org`, and outside any project or
 * in a project the API may see. Needs `projects` left-joined on the meeting's project.
 */
function visibleMeetingsOf(organizationId: string) {
  return and(
    eq(meetings.organizationId, organizationId),
    eq(meetings.audience, "org"),
    or(isNull(meetings.projectId), visibleProjectsOf(organizationId)),
  );
}

const meetingProject = eq(projects.id, meetings.projectId);

// Mirrors isEmptyRichText (an empty document, or only empty paragraphs, has no minutes) in
// SQL, so a list never loads the minutes documents themselves.
const hasMinutes = sql<boolean>`coalesce(jsonb_path_exists(${meetings.minutes}, '$.content[*] ? (@.type != "paragraph" || @.content.size() > 0)'), false)`;

const summaryColumns = {
  id: meetings.id,
  title: meetings.title,
  startsAt: meetings.startsAt,
  durationMinutes: meetings.durationMinutes,
  status: meetings.status,
  locationType: meetings.locationType,
  location: meetings.location,
  hasMinutes,
};

// Newest first; the id only breaks ties between meetings starting at the same instant.
const newestFirst = [desc(meetings.startsAt), asc(meetings.id)];

type SummaryRow = Omit<MeetingSummary, "startsAt"> & { startsAt: Date };

function toSummary(row: SummaryRow): MeetingSummary {
  return {
    id: row.id,
    title: row.title,
    startsAt: toIsoDateTime(row.startsAt),
    durationMinutes: row.durationMinutes,
    status: row.status,
    locationType: row.locationType,
    location: row.location,
    hasMinutes: row.hasMinutes,
  };
}

function startsAtWithin(range: StartsAtRange): SQL[] {
  const exactly = (text: string) => sql`${text}::timestamptz`;
  const conditions: SQL[] = [];
  if (range.from !== null) conditions.push(gte(meetings.startsAt, exactly(range.from.text)));
  if (range.to !== null) {
    const { text, inclusive } = range.to;
    conditions.push((inclusive ? lte : lt)(meetings.startsAt, exactly(text)));
  }
  return conditions;
}

/** `GET /meetings`: one query. */
export async function listMeetings(
  db: Db,
  organizationId: string,
  range: StartsAtRange,
): Promise<MeetingSummary[]> {
  const rows = await db
    .select(summaryColumns)
    .from(meetings)
    .leftJoin(projects, meetingProject)
    .where(and(visibleMeetingsOf(organizationId), ...startsAtWithin(range)))
    .orderBy(...newestFirst);
  return rows.map(toSummary);
}

/** `GET /projects/{slug}/meetings`: two queries (the project, then its meetings). */
export async function listProjectMeetings(
  db: Db,
  organizationId: string,
  slug: string,
  range: StartsAtRange,
): Promise<MeetingSummary[]> {
  const projectId = await visibleProjectId(db, organizationId, slug);
  const rows = await db
    .select(summaryColumns)
    .from(meetings)
    .where(
      and(
        eq(meetings.organizationId, organizationId),
        eq(meetings.projectId, projectId),
        eq(meetings.audience, "org"),
        ...startsAtWithin(range),
      ),
    )
    .orderBy(...newestFirst);
  return rows.map(toSummary);
}

function plainMinutes(minutes: unknown): string {
  return minutes === null ? "" : richTextToPlainText(minutes);
}

/** `GET /meetings/{id}`: one query; the transcript text itself is never loaded. */
export async function getMeeting(
  db: Db,
  organizationId: string,
  meetingId: string,
): Promise<Meeting> {
  const [row] = await db
    .select({
      ...summaryColumns,
      description: meetings.description,
      minutes: meetings.minutes,
      minutesUpdatedAt: meetings.minutesUpdatedAt,
      transcriptId: transcripts.id,
      transcriptStatus: transcripts.status,
      notes: transcripts.notes,
      notesStatus: transcripts.notesStatus,
      notesSource: transcripts.notesSource,
      // octet_length reads the stored size without decompressing a long text.
      hasFullText: sql<boolean>`octet_length(${transcripts.text}) > 0`,
    })
    .from(meetings)
    .leftJoin(projects, meetingProject)
    .leftJoin(transcripts, eq(transcripts.meetingId, meetings.id))
    .where(and(eq(meetings.id, meetingId), visibleMeetingsOf(organizationId)));
  if (row === undefined) throw new NotFound(MEETING_NOT_FOUND);
  const { transcriptId, transcriptStatus, notesStatus } = row;
  const transcript =
    transcriptId === null || transcriptStatus === null || notesStatus === null
      ? null
      : {
          id: transcriptId,
          status: transcriptStatus,
          notes: row.notes,
          notesStatus,
          notesSource: row.notesSource,
          hasFullText: row.hasFullText,
        };
  return {
    ...toSummary(row),
    description: row.description,
    minutesText: plainMinutes(row.minutes),
    minutesUpdatedAt: toIsoDateTime(row.minutesUpdatedAt),
    transcript,
  };
}

/**
 * `GET /meetings/{id}/transcript`: one query. Postgres cuts the text, so at most the returned
 * part leaves the database, and it counts code points, so a surrogate pair is never split.
 */
export async function getTranscript(
  db: Db,
  organizationId: string,
  meetingId: string,
): Promise<Transcript> {
  const [row] = await db
    .select({
      status: transcripts.status,
      text: sql<string | null>`substr(${transcripts.text}, 1, ${TRANSCRIPT_TEXT_LIMIT})`,
      truncated: sql<boolean | null>`char_length(${transcripts.text}) > ${TRANSCRIPT_TEXT_LIMIT}`,
    })
    .from(meetings)
    .leftJoin(projects, meetingProject)
    .leftJoin(transcripts, eq(transcripts.meetingId, meetings.id))
    .where(and(eq(meetings.id, meetingId), visibleMeetingsOf(organizationId)));
  if (row === undefined) throw new NotFound(MEETING_NOT_FOUND);
  // The caller may see the meeting, so saying that only the transcript is missing leaks nothing.
  if (row.status === null || row.text === null) {
    throw new NotFound("This meeting has no transcript");
  }
  return { status: row.status, text: row.text, truncated: row.truncated === true };
}

/** The visible meeting, locked for this transaction's write; 404 otherwise. */
async function lockVisibleMeeting(tx: Db, organizationId: string, meetingId: string) {
  const [meeting] = await tx
    .select({ id: meetings.id, minutes: meetings.minutes })
    .from(meetings)
    .leftJoin(projects, meetingProject)
    .where(and(eq(meetings.id, meetingId), visibleMeetingsOf(organizationId)))
    .for("no key update", { of: meetings });
  if (meeting === undefined) throw new NotFound(MEETING_NOT_FOUND);
  return meeting;
}

export type MinutesWrite = MinutesInput & {
  organizationId: string;
  meetingId: string;
  authorId: string;
};

/** The minutes after this write: the new content, or the stored minutes with it appended. */
function editedMinutes(current: RichTextDoc | null, input: MinutesInput): RichTextDoc {
  const added = markdownToRichText(input.markdown);
  return input.mode === "append" && current !== null ? appendRichText(current, added) : added;
}

/**
 * `POST /meetings/{id}/minutes`. Every accepted POST is a write by the author, even when the
 * minutes come out identical (issue 4: one event per successful write): it stores the minutes,
 * stamps `minutesUpdatedAt`/`minutesUpdatedBy`, and records an event whose diff holds
 * `minutesText` only when the plain text changed.
 */
export async function writeMinutes(db: Db, input: MinutesWrite): Promise<MinutesWritten> {
  return db.transaction(async (tx) => {
    const meeting = await lockVisibleMeeting(tx, input.organizationId, input.meetingId);
    const current = meeting.minutes as RichTextDoc | null;
    const minutes = editedMinutes(current, input);
    const [updated] = await tx
      .update(meetings)
      .set({ minutes, minutesUpdatedAt: sql`now()`, minutesUpdatedBy: input.authorId })
      .where(eq(meetings.id, meeting.id))
      .returning({ minutesUpdatedAt: meetings.minutesUpdatedAt });
    if (updated?.minutesUpdatedAt == null) throw new Error("minutes update returned no row");
    await recordChangeEvent(tx, {
      organizationId: input.organizationId,
      type: "meeting.minutes_updated",
      targetId: meeting.id,
      actorId: input.authorId,
      diff: diffOf({ minutesText: plainMinutes(current) }, { minutesText: plainMinutes(minutes) }),
    });
    return { id: meeting.id, updatedAt: toIsoDateTime(updated.minutesUpdatedAt) };
  });
}

/** Written through the notes endpoint; transcript jobs never overwrite such notes. */
export const HUMAN_NOTES = "human";
/** The notes status once notes are written, by a member or a transcript job. */
export const NOTES_READY = "ready";

export type NotesWrite = {
  organizationId: string;
  meetingId: string;
  notes: string;
  authorId: string;
};

/** The meeting's transcript, locked for this write; 400 when the meeting has none. */
async function lockTranscriptOf(tx: Db, meetingId: string) {
  const [transcript] = await tx
    .select({ id: transcripts.id, notes: transcripts.notes, notesSource: transcripts.notesSource })
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
 * `POST /meetings/{id}/notes`. The transcript row is locked so a transcript job running at the
 * same time (setTranscript) sees these notes as human-authored, or runs first and is replaced.
 * Every accepted POST writes the notes and records an event, even when they are the same
 * (issue 4: one event per successful write); the diff then holds only what changed.
 */
export async function writeNotes(db: Db, input: NotesWrite): Promise<NotesWritten> {
  return db.transaction(async (tx) => {
    const meeting = await lockVisibleMeeting(tx, input.organizationId, input.meetingId);
    const transcript = await lockTranscriptOf(tx, meeting.id);
    await tx
      .update(transcripts)
      .set({
        notes: input.notes,
        notesSource: HUMAN_NOTES,
        notesStatus: NOTES_READY,
        notesUpdatedBy: input.authorId,
        updatedAt: sql`now()`,
      })
      .where(eq(transcripts.id, transcript.id));
    await recordChangeEvent(tx, {
      organizationId: input.organizationId,
      type: "meeting.notes_updated",
      targetId: meeting.id,
      actorId: input.authorId,
      diff: diffOf(
        { notes: transcript.notes, notesSource: transcript.notesSource },
        { notes: input.notes, notesSource: HUMAN_NOTES },
      ),
    });
    return { transcriptId: transcript.id };
  });
}
