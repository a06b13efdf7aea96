import { and, asc, desc, eq, gte, isNull, lt, lte, or, type Placeholder, sql } from "drizzle-orm";
import { NotFound } from "../../core/errors.js";
import { toIsoDateTime } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { isoDateTimeOf, type JsonText, jsonArrayOf, organizationList } from "../../db/json-rows.js";
import { prepared } from "../../db/prepared.js";
import { meetings, projects, transcripts } from "../../db/schema/index.js";
import { visibleProjectList, visibleProjectsOf } from "../projects/service.js";
import type { Meeting, MeetingSummary, Transcript } from "./schemas.js";
import type { StartsAtRange } from "./starts-at-range.js";

// One body for unknown, restricted, private-project and foreign meetings: the answer must not
// tell them apart, nor from an id that is not a UUID (refused by the params schema, which
// answers NotFound's default message too).
export const MEETING_NOT_FOUND = new NotFound().message;

/** Characters (Unicode code points, as Postgres counts them) the transcript endpoint returns. */
const TRANSCRIPT_TEXT_LIMIT = 200_000;

/**
 * Meetings the API may see: in the organisation, audience `org`, and outside any project or
 * in a project the API may see. Needs `projects` left-joined on the meeting's project.
 */
export function visibleMeetingsOf(organizationId: string | Placeholder) {
  return and(
    eq(meetings.organizationId, organizationId),
    eq(meetings.audience, "org"),
    or(isNull(meetings.projectId), visibleProjectsOf(organizationId)),
  );
}

export const meetingProject = eq(projects.id, meetings.projectId);

/** The meeting of the placeholder `meetingId`, when the organisation may see it. */
const visibleMeeting = and(
  eq(meetings.id, sql.placeholder("meetingId")),
  visibleMeetingsOf(sql.placeholder("organizationId")),
);

// Mirrors isEmptyRichText (an empty document, or only empty paragraphs, has no minutes) in
// SQL, so a list never loads the minutes documents themselves.
const hasMinutes = sql<boolean>`coalesce(jsonb_path_exists(${meetings.minutes}, '$.content[*] ? (@.type != "paragraph" || @.content.size() > 0)'), false)`;

const summaryColumns = {
  id: meetings.id,
  title: meetings.title,
  startsAt: isoDateTimeOf(meetings.startsAt),
  durationMinutes: meetings.durationMinutes,
  status: meetings.status,
  locationType: meetings.locationType,
  location: meetings.location,
  hasMinutes,
};

// Newest first; the id only breaks ties between meetings starting at the same instant.
const newestFirst = [desc(meetings.startsAt), asc(meetings.id)];

// The window of `from`/`to`: each bound a placeholder, null when absent. A date-only `to` is
// an exclusive bound (the next midnight), any other an inclusive one (starts-at-range.ts).
const startsAtWithin = and(
  gte(meetings.startsAt, sql`coalesce(${sql.placeholder("from")}::timestamptz, '-infinity')`),
  lte(meetings.startsAt, sql`coalesce(${sql.placeholder("toInclusive")}::timestamptz, 'infinity')`),
  lt(meetings.startsAt, sql`coalesce(${sql.placeholder("toExclusive")}::timestamptz, 'infinity')`),
);

/** The window's placeholder values, compared by Postgres at its microsecond precision. */
function windowOf(range: StartsAtRange) {
  return {
    from: range.from?.text ?? null,
    toInclusive: range.to?.inclusive ? range.to.text : null,
    toExclusive: range.to !== null && !range.to.inclusive ? range.to.text : null,
  };
}

type StartsAtWindow = ReturnType<typeof windowOf>;

const organizationMeetings = organizationList<MeetingSummary, StartsAtWindow>(
  "list_meetings",
  jsonArrayOf<MeetingSummary>(summaryColumns, {
    from: sql`${meetings} left join ${projects} on ${meetingProject}`,
    where: and(visibleMeetingsOf(sql.placeholder("organizationId")), startsAtWithin),
    orderBy: newestFirst,
  }),
);

/** `GET /meetings`: one query, as JSON text. */
export function listMeetings(
  db: Db,
  organizationId: string,
  range: StartsAtRange,
): Promise<JsonText<MeetingSummary[]>> {
  return organizationMeetings(db, organizationId, windowOf(range));
}

const projectMeetings = visibleProjectList<MeetingSummary, StartsAtWindow>(
  "list_project_meetings",
  () =>
    jsonArrayOf<MeetingSummary>(summaryColumns, {
      from: meetings,
      where: and(eq(meetings.projectId, projects.id), eq(meetings.audience, "org"), startsAtWithin),
      orderBy: newestFirst,
    }),
);

/** `GET /projects/{slug}/meetings`: one query over the visible project and its meetings. */
export function listProjectMeetings(
  db: Db,
  organizationId: string,
  slug: string,
  range: StartsAtRange,
): Promise<JsonText<MeetingSummary[]>> {
  return projectMeetings(db, organizationId, slug, windowOf(range));
}

const meetingById = prepared((db) =>
  db
    .select({
      ...summaryColumns,
      description: meetings.description,
      minutesText: meetings.minutesText,
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
    .where(visibleMeeting)
    .prepare("get_meeting"),
);

/** `GET /meetings/{id}`: one query; the transcript text itself is never loaded. */
export async function getMeeting(
  db: Db,
  organizationId: string,
  meetingId: string,
): Promise<Meeting> {
  const [row] = await meetingById(db).execute({ organizationId, meetingId });
  if (row === undefined) throw new NotFound(MEETING_NOT_FOUND);
  const {
    transcriptId,
    transcriptStatus,
    notes,
    notesStatus,
    notesSource,
    hasFullText,
    ...meeting
  } = row;
  const transcript =
    transcriptId === null || transcriptStatus === null || notesStatus === null
      ? null
      : {
          id: transcriptId,
          status: transcriptStatus,
          notes,
          notesStatus,
          notesSource,
          hasFullText,
        };
  return { ...meeting, minutesUpdatedAt: toIsoDateTime(meeting.minutesUpdatedAt), transcript };
}

const transcriptOf = prepared((db) =>
  db
    .select({
      status: transcripts.status,
      text: sql<string | null>`substr(${transcripts.text}, 1, ${TRANSCRIPT_TEXT_LIMIT})`,
      // Counting only one character past the limit: Postgres then decompresses a long text only
      // as far as it is returned, never all of it.
      truncated: sql<
        boolean | null
      >`char_length(substr(${transcripts.text}, 1, ${TRANSCRIPT_TEXT_LIMIT + 1})) > ${TRANSCRIPT_TEXT_LIMIT}`,
    })
    .from(meetings)
    .leftJoin(projects, meetingProject)
    .leftJoin(transcripts, eq(transcripts.meetingId, meetings.id))
    .where(visibleMeeting)
    .prepare("get_transcript"),
);

/**
 * `GET /meetings/{id}/transcript`: one query. Postgres cuts the text, so at most the returned
 * part leaves the database, and it counts code points, so a surrogate pair is never split.
 */
export async function getTranscript(
  db: Db,
  organizationId: string,
  meetingId: string,
): Promise<Transcript> {
  const [row] = await transcriptOf(db).execute({ organizationId, meetingId });
  if (row === undefined) throw new NotFound(MEETING_NOT_FOUND);
  // The caller may see the meeting, so saying that only the transcript is missing leaks nothing.
  if (row.status === null || row.text === null) {
    throw new NotFound("This meeting has no transcript");
  }
  return { status: row.status, text: row.text, truncated: row.truncated === true };
}
