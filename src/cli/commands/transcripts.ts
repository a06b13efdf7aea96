import { readFile } from "node:fs/promises";
import { setTranscript } from "../../modules/meetings/transcripts.js";
import { parseCommandArgs, requireIdOption, requireOption } from "../args.js";
import { CliError, UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

async function readTextFile(file: string, flag: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError(`Cannot read --${flag} ${file}: ${reason}`);
  }
}

/** `svc transcript set`: what a transcript job does, for operators and scripts. */
async function set(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    meeting: { type: "string" },
    "text-file": { type: "string" },
    "notes-file": { type: "string" },
    status: { type: "string" },
    json: { type: "boolean" },
  });
  const meetingId = requireIdOption(values.meeting, "meeting", "a meeting");
  const textFile = requireOption(values["text-file"], "text-file");
  const notesFile = values["notes-file"];
  if (values.status !== undefined && values.status.trim() === "") {
    throw new UsageError("--status must not be empty");
  }
  // Files first: a missing file is refused before anything touches the database.
  const text = await readTextFile(textFile, "text-file");
  const notes = notesFile === undefined ? undefined : await readTextFile(notesFile, "notes-file");
  const written = await withDatabase((db) =>
    setTranscript(db, { meetingId, text, notes, status: values.status }),
  );
  if (values.json) {
    return printJson({ transcriptId: written.transcriptId, notesWritten: written.notesWritten });
  }
  const notesOutcome =
    notes === undefined
      ? "notes untouched"
      : written.notesWritten
        ? "notes written"
        : "notes kept (written by a member)";
  printLine(
    `Transcript ${written.transcriptId} ${written.created ? "created" : "replaced"} for meeting ${meetingId}; ${notesOutcome}.`,
  );
}

export async function transcriptCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "set") return set(rest);
  throw new UsageError("transcript needs set");
}
