import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { transcripts } from "../../src/db/schema/index.js";
import { runCli, runCliJson } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { importFixture, type Workspace, workspaceDocument } from "../support/fixtures.js";

let testDb: TestDatabase;
let env: Record<string, string>;
let dir: string;
let acme: Workspace;

async function writeText(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

function transcriptOf(meetingId: string) {
  return testDb.database.db
    .select({
      id: transcripts.id,
      status: transcripts.status,
      text: transcripts.text,
      notes: transcripts.notes,
      notesSource: transcripts.notesSource,
    })
    .from(transcripts)
    .where(eq(transcripts.meetingId, meetingId));
}

beforeAll(async () => {
  testDb = await createTestDatabase();
  env = { DATABASE_URL: testDb.url };
  dir = await mkdtemp(path.join(tmpdir(), "svc-transcript-"));
  acme = await importFixture(
    testDb.database.db,
    workspaceDocument("acme", {
      meetings: [
        {
          title: "Standup",
          startsAt: "2026-03-10T09:00:00Z",
          durationMinutes: 15,
          status: "done",
          locationType: "video",
          // The CLI is the application's own path: a restricted meeting is fine.
          audience: "restricted",
        },
      ],
    }),
  );
});
afterAll(() => testDb.drop());

describe("svc transcript set", () => {
  it("creates the transcript with machine notes and prints the JSON summary", async () => {
    const meetingId = acme.meetings[0]!.id;
    const text = await writeText("text.txt", "Ada: hello.\nMax: hi.\n");
    const notes = await writeText("notes.md", "- greeted");
    const printed = await runCliJson(
      [
        "transcript",
        "set",
        "--meeting",
        meetingId,
        "--text-file",
        text,
        "--notes-file",
        notes,
        "--json",
      ],
      env,
    );
    expect(printed).toEqual({ transcriptId: expect.any(String), notesWritten: true });
    expect(await transcriptOf(meetingId)).toEqual([
      {
        id: printed.transcriptId,
        status: "ready",
        text: "Ada: hello.\nMax: hi.\n",
        notes: "- greeted",
        notesSource: "ai",
      },
    ]);
  });

  it("keeps human notes, sets the status, and confirms in one line", async () => {
    const meetingId = acme.meetings[0]!.id;
    await testDb.database.db
      .update(transcripts)
      .set({ notes: "Member notes", notesSource: "human" })
      .where(eq(transcripts.meetingId, meetingId));
    const text = await writeText("text2.txt", "Second take");
    const notes = await writeText("notes2.md", "machine again");
    const res = await runCli(
      [
        "transcript",
        "set",
        "--meeting",
        meetingId,
        "--text-file",
        text,
        "--notes-file",
        notes,
        "--status",
        "reprocessed",
      ],
      env,
    );
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(
      new RegExp(
        `^Transcript [0-9a-f-]{36} replaced for meeting ${meetingId}; notes kept .*\\.\\n$`,
      ),
    );
    expect(await transcriptOf(meetingId)).toMatchObject([
      { status: "reprocessed", text: "Second take", notes: "Member notes", notesSource: "human" },
    ]);
  });

  it("refuses an unknown meeting and an unreadable file on stderr with a non-zero exit", async () => {
    const text = await writeText("text3.txt", "x");
    const unknown = await runCli(
      [
        "transcript",
        "set",
        "--meeting",
        "00000000-0000-4000-8000-000000000000",
        "--text-file",
        text,
      ],
      env,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toMatch(/No meeting with id 00000000-0000-4000-8000-000000000000/);

    const missing = await runCli(
      [
        "transcript",
        "set",
        "--meeting",
        acme.meetings[0]!.id,
        "--text-file",
        path.join(dir, "nope.txt"),
      ],
      env,
    );
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toMatch(/Cannot read --text-file .*nope\.txt/);
    expect(await transcriptOf(acme.meetings[0]!.id)).toMatchObject([{ text: "Second take" }]);
  });

  it("refuses a missing or malformed --meeting as a usage error", async () => {
    const res = await runCli(["transcript", "set", "--text-file", "x"], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--meeting is required/);
    const malformed = await runCli(
      ["transcript", "set", "--meeting", "not-a-uuid", "--text-file", "x"],
      env,
    );
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/^--meeting must be a meeting id \(a UUID\)\n/);
  });
});
