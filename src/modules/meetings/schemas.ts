import { z } from "zod";
import { id, isoDateTime, storableText } from "../../core/values.js";

export const meetingIdParams = z.object({ meeting_id: id });

export const meetingSummarySchema = z
  .object({
    id,
    title: z.string().nullable(),
    startsAt: isoDateTime,
    durationMinutes: z.int(),
    status: z.string(),
    locationType: z.string(),
    location: z.string().nullable(),
    hasMinutes: z.boolean().describe("Minutes are present and not empty"),
  })
  .meta({ id: "MeetingSummary" });

const meetingTranscriptSummarySchema = z
  .object({
    id,
    status: z.string(),
    notes: z.string().nullable(),
    notesStatus: z.string(),
    notesSource: z
      .string()
      .nullable()
      .describe('"human" once written through the notes endpoint; transcript jobs keep those'),
    hasFullText: z.boolean().describe("The verbatim text is not empty (read it at /transcript)"),
  })
  .meta({ id: "MeetingTranscriptSummary" });

export const meetingSchema = meetingSummarySchema
  .extend({
    description: z.string().nullable(),
    minutesText: z.string().describe('The minutes flattened to plain text; "" when none'),
    minutesUpdatedAt: isoDateTime.nullable(),
    transcript: meetingTranscriptSummarySchema.nullable(),
  })
  .meta({ id: "Meeting" });

export const transcriptSchema = z
  .object({
    status: z.string(),
    text: z
      .string()
      .describe(
        "The verbatim text, cut after 200000 characters (Unicode code points, so a surrogate pair is never split)",
      ),
    truncated: z.boolean().describe("The text is longer than 200000 characters and was cut"),
  })
  .meta({ id: "Transcript" });

const minutesModes = ["replace", "append"] as const;

export const minutesInputSchema = z
  .strictObject({
    markdown: storableText.describe(
      "Headings, bullet and numbered lists convert to rich text; tables and images are kept as text. Limits as for a page body: MARKDOWN_TIMEOUT_MS, and RICH_TEXT_MAX_BYTES after an append too",
    ),
    mode: z
      .enum(minutesModes)
      .default("replace")
      .describe("`replace` discards the current minutes; `append` adds below a divider"),
  })
  .meta({
    id: "MeetingMinutes",
    examples: [{ markdown: "## Decisions\n\n- Order the gripper samples\n", mode: "append" }],
  });

export const minutesWrittenSchema = z
  .object({
    id,
    updatedAt: isoDateTime
      .nullable()
      .describe(
        "The meeting's minutesUpdatedAt after the write; null only when the meeting never had minutes and this write left it so",
      ),
  })
  .meta({ id: "MeetingMinutesUpdated" });

export const notesInputSchema = z
  .strictObject({
    notes: storableText.describe("Replaces the transcript's notes, marked human-authored"),
  })
  .meta({ id: "MeetingNotes", examples: [{ notes: "Ada orders the gripper samples." }] });

export const notesWrittenSchema = z
  .object({ transcriptId: id })
  .meta({ id: "MeetingNotesUpdated" });

export type MeetingSummary = z.infer<typeof meetingSummarySchema>;
export type Meeting = z.infer<typeof meetingSchema>;
export type Transcript = z.infer<typeof transcriptSchema>;
export type MinutesInput = z.infer<typeof minutesInputSchema>;
export type MinutesWritten = z.infer<typeof minutesWrittenSchema>;
export type NotesWritten = z.infer<typeof notesWrittenSchema>;
