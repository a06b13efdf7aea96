import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, meetings, transcripts } from "../../src/db/schema/index.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import {
  assertRefusalsChangeNothing,
  clientBodies,
  clientText,
  clientValue,
} from "../support/property.js";

// Arbitrary JSON bodies against the meeting writes: the answer is always 200 or a 400 failure
// envelope, never a 5xx, and a 400 changes nothing. Invisible meetings are never written.

let t: TestApp;
let acme: Workspace;
let token: string;
let meetingId: string;
let invisibleIds: string[];

const meeting = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  startsAt: "2026-03-10T09:00:00Z",
  durationMinutes: 30,
  status: "scheduled",
  locationType: "video",
  audience: "org",
  minutesMarkdown: "Start",
  transcript: { status: "ready", text: "words", notes: "machine", notesSource: "ai" },
  ...extra,
});

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    meetings: [meeting("Target"), meeting("Board", { audience: "restricted" })],
    projects: [project("secret", { visibility: "private", meetings: [meeting("Hidden")] })],
  });
  const other = await importOrganization(t.db, "other", { meetings: [meeting("Foreign")] });
  token = await mintToken(t.db, acme, ["meetings:read", "meetings:write"]);
  meetingId = acme.meetings[0]!.id;
  invisibleIds = [acme.meetings[1]!.id, acme.projects[0]!.meetings[0]!.id, other.meetings[0]!.id];
});
afterAll(() => t.close());

/** Everything a write could touch: the meetings' minutes, the transcripts' notes, the events. */
async function snapshot() {
  const [meetingRows, transcriptRows, events] = await Promise.all([
    t.db
      .select({
        id: meetings.id,
        minutes: meetings.minutes,
        at: meetings.minutesUpdatedAt,
        by: meetings.minutesUpdatedBy,
      })
      .from(meetings)
      .orderBy(meetings.id),
    t.db
      .select({
        id: transcripts.id,
        notes: transcripts.notes,
        source: transcripts.notesSource,
        status: transcripts.notesStatus,
        by: transcripts.notesUpdatedBy,
      })
      .from(transcripts)
      .orderBy(transcripts.id),
    t.db.$count(changeEvents),
  ]);
  return { meetings: meetingRows, transcripts: transcriptRows, events };
}

const anyText = clientText(
  ["", "# Heading\n\n- a\n  - b", "| a |\n|---|", "![img](x.png)", "> ".repeat(50)],
  [fc.string({ maxLength: 3 }).map((s) => `${s}\udc00`)],
);

const anyValue = clientValue(anyText);

const minutesBodies = () =>
  clientBodies(
    fc.record(
      {
        markdown: fc.oneof(anyText, anyValue),
        mode: fc.oneof(fc.constantFrom("replace", "append"), anyValue),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      { markdown: anyText, mode: fc.constantFrom("replace", "append"), extra: anyValue },
      { requiredKeys: ["markdown"] },
    ),
  );

const notesBodies = () =>
  clientBodies(
    fc.record({ notes: fc.oneof(anyText, anyValue) }, { requiredKeys: [] }),
    fc.record({ notes: anyText, notesSource: anyValue }, { requiredKeys: ["notes"] }),
  );

describe.each([
  ["minutes", minutesBodies],
  ["notes", notesBodies],
])("POST /meetings/{meeting_id}/%s with arbitrary bodies", (kind, bodies) => {
  it("answers 200 or 400, and a 400 writes nothing", async () => {
    await assertRefusalsChangeNothing({
      bodies: bodies(),
      send: (body) => api(t.app, "POST", `/api/v1/meetings/${meetingId}/${kind}`, { token, body }),
      state: snapshot,
      // A write that changes something records one event; one that changes nothing, none.
      accepted: (before, after) => expect([0, 1]).toContain(after.events - before.events),
      numRuns: 100,
    });
  });
});

describe("writes to meetings the API may not see", () => {
  it("answer 400 or 404, never 200, and write nothing", async () => {
    const targets = fc.oneof(
      fc.constantFrom(...invisibleIds, "not-a-uuid", "00000000-0000-4000-8000-000000000000"),
      fc.uuid(),
    );
    await fc.assert(
      fc.asyncProperty(
        targets,
        fc.constantFrom("minutes", "notes"),
        fc.oneof(minutesBodies(), notesBodies()),
        async (target, kind, body) => {
          const before = await snapshot();
          const res = await api(t.app, "POST", `/api/v1/meetings/${target}/${kind}`, {
            token,
            body,
          });
          expect([400, 404]).toContain(res.status);
          expect(await snapshot()).toEqual(before);
        },
      ),
      { numRuns: 60 },
    );
  });
});
