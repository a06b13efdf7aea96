import { eq, sql } from "drizzle-orm";
import { InvalidRequest, NotFound } from "../../core/errors.js";
import { id, isStorableText, UNSTORABLE_TEXT } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { assertRowReturned } from "../../db/returned-row.js";
import { meetings, transcripts } from "../../db/schema/index.js";
import { HUMAN_NOTES, NOTES_READY } from "./writes.js";

/** Notes written by a transcript job. */
const MACHINE_NOTES = "ai";
/** The notes status of a transcript that has no notes yet (as `svc import` sets it). */
const NO_NOTES = "none";
const DEFAULT_TRANSCRIPT_STATUS = "ready";

export type TranscriptWrite = {
  meetingId: string;
  /** The verbatim text; replaces the current text. */
  text: string;
  /** Defaults to `ready`. */
  status?: string;
  /** Machine notes; written unless the current notes are human-authored. */
  notes?: string;
};

export type TranscriptWritten = {
  transcriptId: string;
  created: boolean;
  /** False when no notes were given, or when human-authored notes were kept. */
  notesWritten: boolean;
};

function refuseUnstorable(field: string, value: string | undefined): void {
  if (value !== undefined && !isStorableText(value)) {
    throw new InvalidRequest(`${field}: ${UNSTORABLE_TEXT}`);
  }
}

/**
 * Creates or replaces a meeting's transcript for a transcript job (no API visibility). Locks the
 * meeting, then the transcript, as the notes endpoint does, so a member's notes written meanwhile
 * are either seen here as human-authored and kept, or written after and win.
 */
export async function setTranscript(db: Db, input: TranscriptWrite): Promise<TranscriptWritten> {
  if (!id.safeParse(input.meetingId).success) {
    throw new NotFound(`No meeting with id ${input.meetingId}`);
  }
  const status = input.status ?? DEFAULT_TRANSCRIPT_STATUS;
  if (status.trim() === "") throw new InvalidRequest("status: must not be empty");
  refuseUnstorable("text", input.text);
  refuseUnstorable("notes", input.notes);
  refuseUnstorable("status", status);
  const { notes } = input;
  return db.transaction(async (tx) => {
    const [meeting] = await tx
      .select({ id: meetings.id })
      .from(meetings)
      .where(eq(meetings.id, input.meetingId))
      .for("no key update");
    if (meeting === undefined) throw new NotFound(`No meeting with id ${input.meetingId}`);
    const [current] = await tx
      .select({ id: transcripts.id, notesSource: transcripts.notesSource })
      .from(transcripts)
      .where(eq(transcripts.meetingId, meeting.id))
      .for("update");
    const machineNotes =
      notes === undefined
        ? {}
        : { notes, notesStatus: NOTES_READY, notesSource: MACHINE_NOTES, notesUpdatedBy: null };
    if (current === undefined) {
      const [created] = await tx
        .insert(transcripts)
        .values({
          meetingId: meeting.id,
          status,
          text: input.text,
          notes: null,
          notesStatus: NO_NOTES,
          notesSource: null,
          ...machineNotes,
        })
        .returning({ id: transcripts.id });
      assertRowReturned(created, "transcript insert");
      return { transcriptId: created.id, created: true, notesWritten: notes !== undefined };
    }
    const notesWritten = notes !== undefined && current.notesSource !== HUMAN_NOTES;
    await tx
      .update(transcripts)
      .set({
        status,
        text: input.text,
        updatedAt: sql`now()`,
        ...(notesWritten ? machineNotes : {}),
      })
      .where(eq(transcripts.id, current.id));
    return { transcriptId: current.id, created: false, notesWritten };
  });
}
