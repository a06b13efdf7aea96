import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { projectSlugParams } from "../../core/values.js";
import { organizationOf, writerOf } from "../../http/auth.js";
import { ok, sendJsonData } from "../../http/envelope.js";
import { apiRoute } from "../../http/route-schema.js";
import { withWriteEffect } from "../change-events/write-effects.js";
import { getMeeting, getTranscript, listMeetings, listProjectMeetings } from "./reads.js";
import {
  meetingIdParams,
  meetingSchema,
  meetingSummarySchema,
  minutesInputSchema,
  minutesWrittenSchema,
  notesInputSchema,
  notesWrittenSchema,
  transcriptSchema,
} from "./schemas.js";
import { startsAtRange, startsAtRangeQuery } from "./starts-at-range.js";
import { writeMinutes, writeNotes } from "./writes.js";

const VISIBILITY =
  "Only meetings with audience `org`, outside any project or in a project that is not private, are visible; any other meeting answers 404 exactly like an unknown id.";
const LIST_ORDER =
  "Newest first: by `startsAt` descending, then by `id` ascending between meetings starting at the same instant. Meetings with a restricted audience are left out.";
const RANGE =
  "`from` and `to` are inclusive bounds on `startsAt`: ISO 8601 date-times with seconds and `Z` or an offset, or plain dates (`from` = 00:00 UTC that day, `to` = the whole UTC day). An unparsable value, or `to` before `from`, answers 400 naming the parameter.";

export const meetingRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    "/meetings",
    apiRoute({
      access: "meetings:read",
      operationId: "listMeetings",
      summary: "List the meetings of the organisation",
      description: `All meetings the token may see, with or without a project. ${LIST_ORDER} ${RANGE}`,
      tags: ["Meetings"],
      querystring: startsAtRangeQuery,
      data: z.array(meetingSummarySchema),
    }),
    async (request, reply) =>
      sendJsonData(
        reply,
        await listMeetings(app.db, organizationOf(request), startsAtRange(request.query)),
      ),
  );

  app.get(
    "/projects/:slug/meetings",
    apiRoute({
      access: "meetings:read",
      operationId: "listProjectMeetings",
      summary: "List a project's meetings",
      description: `An unknown, foreign or private project answers 404. ${LIST_ORDER} ${RANGE}`,
      tags: ["Meetings"],
      params: projectSlugParams,
      querystring: startsAtRangeQuery,
      data: z.array(meetingSummarySchema),
    }),
    async (request, reply) =>
      sendJsonData(
        reply,
        await listProjectMeetings(
          app.db,
          organizationOf(request),
          request.params.slug,
          startsAtRange(request.query),
        ),
      ),
  );

  app.get(
    "/meetings/:meeting_id",
    apiRoute({
      access: "meetings:read",
      operationId: "getMeeting",
      summary: "One meeting, with its minutes as plain text and its transcript's notes",
      description: `${VISIBILITY} The verbatim transcript text is read at /meetings/{meeting_id}/transcript.`,
      tags: ["Meetings"],
      params: meetingIdParams,
      data: meetingSchema,
    }),
    async (request) =>
      ok(await getMeeting(app.db, organizationOf(request), request.params.meeting_id)),
  );

  app.get(
    "/meetings/:meeting_id/transcript",
    apiRoute({
      access: "meetings:read",
      operationId: "getMeetingTranscript",
      summary: "A meeting's verbatim transcript",
      description: `${VISIBILITY} The text is cut after 200000 characters (Unicode code points, so a surrogate pair is never split) and \`truncated\` says so. A meeting without a transcript answers 404.`,
      tags: ["Meetings"],
      params: meetingIdParams,
      data: transcriptSchema,
    }),
    async (request) =>
      ok(await getTranscript(app.db, organizationOf(request), request.params.meeting_id)),
  );

  app.post(
    "/meetings/:meeting_id/minutes",
    apiRoute({
      access: "meetings:write",
      operationId: "writeMeetingMinutes",
      summary: "Replace or append to a meeting's minutes",
      description: withWriteEffect(
        "writeMeetingMinutes",
        `${VISIBILITY} The markdown is converted to rich text; \`append\` adds it below a divider.`,
      ),
      tags: ["Meetings"],
      params: meetingIdParams,
      body: minutesInputSchema,
      data: minutesWrittenSchema,
    }),
    async (request) =>
      ok(
        await writeMinutes(
          app.db,
          app.markdown,
          request.params.meeting_id,
          writerOf(request),
          request.body,
        ),
      ),
  );

  app.post(
    "/meetings/:meeting_id/notes",
    apiRoute({
      access: "meetings:write",
      operationId: "writeMeetingNotes",
      summary: "Replace the notes of a meeting's transcript",
      description: withWriteEffect(
        "writeMeetingNotes",
        `${VISIBILITY} The notes are marked human-authored (notesSource \`human\`, notesStatus \`ready\`), so transcript jobs no longer overwrite them. A meeting without a transcript answers 400.`,
      ),
      tags: ["Meetings"],
      params: meetingIdParams,
      body: notesInputSchema,
      data: notesWrittenSchema,
    }),
    async (request) =>
      ok(
        await writeNotes(app.db, request.params.meeting_id, writerOf(request), request.body.notes),
      ),
  );
};
