import { and, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Scope } from "../../src/core/scopes.js";
import { changeEvents, meetings, transcripts } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import {
  getMeeting,
  getTranscript,
  listMeetings,
  listProjectMeetings,
} from "../../src/modules/meetings/reads.js";
import { startsAtRange } from "../../src/modules/meetings/starts-at-range.js";
import { setTranscript } from "../../src/modules/meetings/transcripts.js";
import { removeMember } from "../../src/modules/users/service.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { eventRowsFor, expectOneEventFor } from "../support/change-events.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { expectInvalidRequest } from "../support/invalid-request.js";
import { expectOneNotFoundBody, NOT_FOUND_BODY } from "../support/not-found.js";
import { expectInsufficientScope, tokenWithout } from "../support/scope-checks.js";

let t: TestApp;
let acme: Workspace;
let reader: string;
let writer: string;

const meeting = (title: string | null, startsAt: string, extra: Record<string, unknown> = {}) => ({
  title,
  startsAt,
  durationMinutes: 30,
  status: "scheduled",
  locationType: "video",
  location: "https://meet.example/room",
  audience: "org",
  ...extra,
});

const transcript = (extra: Record<string, unknown> = {}) => ({
  status: "ready",
  text: "Ada: hello.",
  notes: "Machine summary",
  notesSource: "ai",
  ...extra,
});

const topLevel = [
  meeting("All hands", "2026-03-10T09:00:00Z", {
    description: "Monthly",
    minutesMarkdown: "# Agenda\n\n- budget\n- hiring",
    transcript: transcript(),
  }),
  meeting("Board", "2026-03-11T09:00:00Z", { audience: "restricted", transcript: transcript() }),
  meeting("Tie one", "2026-03-05T10:00:00Z"),
  meeting("Tie two", "2026-03-05T10:00:00Z"),
  meeting("Empty minutes", "2026-03-01T00:00:00Z", {
    minutesMarkdown: "",
    transcript: transcript({ text: "", notes: null, notesSource: null }),
  }),
  meeting("Late February", "2026-02-28T23:59:59.999Z"),
  meeting(null, "2026-01-15T08:00:00+01:00", { location: null, locationType: "room" }),
  meeting("Minutes target", "2025-06-01T10:00:00Z"),
  meeting("Notes target", "2025-06-02T10:00:00Z", { transcript: transcript() }),
  meeting("Guard target", "2025-06-03T10:00:00Z"),
  meeting("No transcript", "2025-06-04T10:00:00Z"),
  meeting("Author target", "2025-06-05T10:00:00Z", {
    minutesMarkdown: "kept",
    transcript: transcript(),
  }),
  meeting("Transcript exact", "2025-05-01T10:00:00Z"),
  meeting("Transcript over", "2025-05-02T10:00:00Z"),
  meeting("Transcript pairs", "2025-05-03T10:00:00Z"),
];

function topId(title: string | null): string {
  const found = acme.meetings.find((m) => m.title === title);
  if (found === undefined) throw new Error(`no fixture meeting ${title}`);
  return found.id;
}

let roverSync: string;
let roverRestricted: string;
let hidden: string;
let foreign: string;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000" });
  acme = await importOrganization(t.db, "acme", {
    users: [
      { email: "admin@acme.example", name: "Ada Admin", role: "admin" },
      { email: "member@acme.example", name: "Max Member", role: "member" },
      { email: "leaver@acme.example", name: "Lee Leaver", role: "member" },
    ],
    meetings: topLevel,
    projects: [
      project("rover", {
        meetings: [
          meeting("Rover sync", "2026-03-12T09:00:00Z", { minutesMarkdown: "Wheels" }),
          meeting("Rover review", "2026-02-01T09:00:00Z"),
          meeting("Rover restricted", "2026-03-13T09:00:00Z", {
            audience: "restricted",
            transcript: transcript(),
          }),
        ],
      }),
      project("secret", {
        visibility: "private",
        meetings: [meeting("Hidden", "2026-03-14T09:00:00Z", { transcript: transcript() })],
      }),
    ],
  });
  const other = await importOrganization(t.db, "other", {
    meetings: [meeting("Foreign", "2026-03-15T09:00:00Z", { transcript: transcript() })],
    projects: [project("theirs")],
  });
  roverSync = acme.projects[0]!.meetings[0]!.id;
  roverRestricted = acme.projects[0]!.meetings[2]!.id;
  hidden = acme.projects[1]!.meetings[0]!.id;
  foreign = other.meetings[0]!.id;
  reader = await mintToken(t.db, acme, ["meetings:read"]);
  writer = await mintToken(t.db, acme, ["meetings:read", "meetings:write"], 1);
});
afterAll(() => t.close());

type Summary = { id: string; title: string | null; startsAt: string };

const titles = (data: Summary[]) => data.map((m) => m.title);

async function list(url: string, token = reader) {
  const res = await api(t.app, "GET", `/api/v1${url}`, { token });
  expect(res.status).toBe(200);
  return res.body.data as Summary[];
}

const eventsFor = (meetingId: string) => eventRowsFor(t.db, meetingId);

/** The change event a write by the writer token's user (Max) records on a meeting. */
const writerEvent = (meetingId: string, action: string, diff: unknown) => ({
  organizationId: acme.organization.id,
  type: `meeting.${action}`,
  action,
  targetKind: "meeting",
  targetId: meetingId,
  actorId: acme.users[1]!.id,
  diff,
});

describe("GET /meetings", () => {
  it("lists every visible meeting of the organisation, with or without a project, newest first", async () => {
    const data = await list("/meetings");
    const tieIds = [topId("Tie one"), topId("Tie two")].sort();
    const tieTitles = tieIds.map((id) => (id === topId("Tie one") ? "Tie one" : "Tie two"));
    expect(titles(data)).toEqual([
      "Rover sync",
      "All hands",
      ...tieTitles,
      "Empty minutes",
      "Late February",
      "Rover review",
      null,
      "Author target",
      "No transcript",
      "Guard target",
      "Notes target",
      "Minutes target",
      "Transcript pairs",
      "Transcript over",
      "Transcript exact",
    ]);
    // Never: restricted audience, private project, another organisation.
    const ids = data.map((m) => m.id);
    for (const invisible of [topId("Board"), roverRestricted, hidden, foreign]) {
      expect(ids).not.toContain(invisible);
    }
  });

  it("answers the spec's MeetingSummary fields exactly, with hasMinutes", async () => {
    const data = await list("/meetings");
    expect(data.find((m) => m.title === "All hands")).toEqual({
      id: topId("All hands"),
      title: "All hands",
      startsAt: "2026-03-10T09:00:00.000Z",
      durationMinutes: 30,
      status: "scheduled",
      locationType: "video",
      location: "https://meet.example/room",
      hasMinutes: true,
    });
    expect(data.find((m) => m.title === null)).toEqual({
      id: topId(null),
      title: null,
      startsAt: "2026-01-15T07:00:00.000Z",
      durationMinutes: 30,
      status: "scheduled",
      locationType: "room",
      location: null,
      hasMinutes: false,
    });
    // Minutes written as an empty document are no minutes.
    expect(data.find((m) => m.title === "Empty minutes")).toMatchObject({ hasMinutes: false });
  });

  it("counts an editor's blank document as no minutes, like isEmptyRichText", async () => {
    const meetingId = topId("Tie two");
    const cases: [unknown, boolean][] = [
      [{ type: "doc", content: [{ type: "paragraph" }] }, false],
      [
        { type: "doc", content: [{ type: "paragraph", content: [] }, { type: "paragraph" }] },
        false,
      ],
      [{ type: "doc", content: [{ type: "horizontalRule" }] }, true],
      [{ type: "doc", content: [{ type: "paragraph", content: [{ type: "hardBreak" }] }] }, true],
      [null, false],
    ];
    for (const [minutes, expected] of cases) {
      await t.db
        .update(meetings)
        .set({ minutes: minutes as never })
        .where(eq(meetings.id, meetingId));
      const data = await list("/meetings?from=2026-03-05&to=2026-03-05");
      expect(data.find((m) => m.id === meetingId)).toMatchObject({ hasMinutes: expected });
      const detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
      expect(detail.body.data.hasMinutes).toBe(expected);
    }
  });

  it("filters startsAt with inclusive from and to date-times", async () => {
    const exact = await list("/meetings?from=2026-03-05T10:00:00Z&to=2026-03-10T09:00:00Z");
    expect(titles(exact).sort()).toEqual(["All hands", "Tie one", "Tie two"]);
    const offset = await list(
      `/meetings?from=${encodeURIComponent("2026-03-10T10:00:00+01:00")}&to=${encodeURIComponent("2026-03-10T10:00:00+01:00")}`,
    );
    expect(titles(offset)).toEqual(["All hands"]);
    const justAfter = await list("/meetings?from=2026-03-10T09:00:00.001Z&to=2026-03-11T00:00:00Z");
    expect(titles(justAfter)).toEqual([]);
    // Compared at the database's microsecond precision, not rounded to milliseconds.
    const microsAfter = await list("/meetings?from=2026-03-10T09:00:00.0001Z");
    expect(titles(microsAfter)).toEqual(["Rover sync"]);
    const onlyTo = await list("/meetings?to=2025-05-02T10:00:00Z");
    expect(titles(onlyTo)).toEqual(["Transcript over", "Transcript exact"]);
    const onlyFrom = await list("/meetings?from=2026-03-10T09:00:00Z");
    expect(titles(onlyFrom)).toEqual(["Rover sync", "All hands"]);
  });

  it("takes plain dates as whole UTC days", async () => {
    const march1 = await list("/meetings?from=2026-03-01&to=2026-03-01");
    expect(titles(march1)).toEqual(["Empty minutes"]);
    const february = await list("/meetings?from=2026-02-01&to=2026-02-28");
    expect(titles(february)).toEqual(["Late February", "Rover review"]);
  });

  it.each([
    ["from", "from=yesterday", "from"],
    ["to", "to=2026-13-01", "to"],
    ["a local time without offset", "from=2026-03-01T10:00:00", "from"],
    ["an impossible date", "to=2026-02-30T00:00:00Z", "to"],
    ["a year an offset pushes out of range", "from=0001-01-01T00:00:00%2B01:00", "from"],
    ["to before from", "from=2026-03-02&to=2026-03-01", "to"],
    ["a repeated parameter", "from=2026-03-01&from=2026-03-02", "from"],
  ])("refuses %s with 400 naming the parameter", async (_name, query, parameter) => {
    const res = await api(t.app, "GET", `/api/v1/meetings?${query}`, { token: reader });
    expectInvalidRequest(res, expect.stringMatching(new RegExp(`^${parameter}: `)));
  });

  it("names the formats it takes when a bound is neither", async () => {
    const res = await api(t.app, "GET", "/api/v1/meetings?from=2026-03-01T10:00", {
      token: reader,
    });
    expectInvalidRequest(
      res,
      "from: expected a date-time as ISO 8601 with seconds and Z or an offset, e.g. 2026-03-12T09:00:00Z, or a date as YYYY-MM-DD",
    );
  });
});

describe("GET /projects/{slug}/meetings", () => {
  it("lists the project's visible meetings newest first, restricted ones left out", async () => {
    const data = await list("/projects/rover/meetings");
    expect(titles(data)).toEqual(["Rover sync", "Rover review"]);
    expect(data[0]).toEqual({
      id: roverSync,
      title: "Rover sync",
      startsAt: "2026-03-12T09:00:00.000Z",
      durationMinutes: 30,
      status: "scheduled",
      locationType: "video",
      location: "https://meet.example/room",
      hasMinutes: true,
    });
  });

  it("applies from and to as well", async () => {
    expect(titles(await list("/projects/rover/meetings?to=2026-02-01"))).toEqual(["Rover review"]);
    const res = await api(t.app, "GET", "/api/v1/projects/rover/meetings?to=nope", {
      token: reader,
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^to: /);
  });

  it("answers private, foreign and unknown projects with the same 404 body", async () => {
    await expectOneNotFoundBody(["secret", "theirs", "never-existed"], (slug) =>
      api(t.app, "GET", `/api/v1/projects/${slug}/meetings`, { token: reader }),
    );
  });
});

describe("GET /meetings/{meeting_id}", () => {
  it("answers the Meeting with minutes as plain text and the transcript summary", async () => {
    const res = await api(t.app, "GET", `/api/v1/meetings/${topId("All hands")}`, {
      token: reader,
    });
    expect(res.status).toBe(200);
    const allHands = acme.meetings.find((m) => m.title === "All hands");
    expect(res.body.data).toEqual({
      id: topId("All hands"),
      title: "All hands",
      startsAt: "2026-03-10T09:00:00.000Z",
      durationMinutes: 30,
      status: "scheduled",
      locationType: "video",
      location: "https://meet.example/room",
      hasMinutes: true,
      description: "Monthly",
      minutesText: "Agenda\n\n- budget\n- hiring",
      minutesUpdatedAt: expect.any(String),
      transcript: {
        id: allHands?.transcript?.id,
        status: "ready",
        notes: "Machine summary",
        notesStatus: "ready",
        notesSource: "ai",
        hasFullText: true,
      },
    });
  });

  it("answers null transcript, empty minutesText and null minutesUpdatedAt when there are none", async () => {
    const res = await api(t.app, "GET", `/api/v1/meetings/${topId("Tie one")}`, { token: reader });
    expect(res.body.data).toMatchObject({
      hasMinutes: false,
      description: null,
      minutesText: "",
      minutesUpdatedAt: null,
      transcript: null,
    });
  });

  it("says hasFullText false for an empty transcript text", async () => {
    const res = await api(t.app, "GET", `/api/v1/meetings/${topId("Empty minutes")}`, {
      token: reader,
    });
    expect(res.body.data.minutesText).toBe("");
    expect(res.body.data.transcript).toMatchObject({
      hasFullText: false,
      notes: null,
      notesStatus: "none",
      notesSource: null,
    });
  });

  it("shows a meeting in a visible project", async () => {
    const res = await api(t.app, "GET", `/api/v1/meetings/${roverSync}`, { token: reader });
    expect(res.status).toBe(200);
    expect(res.body.data.minutesText).toBe("Wheels");
  });
});

describe("invisible meetings", () => {
  const invisible = () => ({
    restricted: topId("Board"),
    "restricted in a visible project": roverRestricted,
    "in a private project": hidden,
    "of another organisation": foreign,
    unknown: "00000000-0000-4000-8000-000000000000",
    "not a UUID": "not-a-uuid",
  });

  const requests: [string, "GET" | "POST", string, unknown][] = [
    ["detail", "GET", "", undefined],
    ["transcript", "GET", "/transcript", undefined],
    ["minutes", "POST", "/minutes", { markdown: "# leak" }],
    ["notes", "POST", "/notes", { notes: "leak" }],
  ];

  it.each(requests)(
    "answer %s with one identical 404 body",
    async (_name, method, suffix, body) => {
      const sent = await expectOneNotFoundBody(Object.values(invisible()), (meetingId) =>
        api(t.app, method, `/api/v1/meetings/${meetingId}${suffix}`, { token: writer, body }),
      );
      expect(sent).toBe(JSON.stringify(NOT_FOUND_BODY));
    },
  );

  it("are never written to", async () => {
    const ids = Object.values(invisible()).filter((id) => id !== "not-a-uuid");
    for (const meetingId of ids) expect(await eventsFor(meetingId)).toEqual([]);
    const [board] = await t.db
      .select({ minutes: meetings.minutes })
      .from(meetings)
      .where(eq(meetings.id, topId("Board")));
    expect(board?.minutes).toBeNull();
    const [hiddenTranscript] = await t.db
      .select({ notes: transcripts.notes })
      .from(transcripts)
      .where(eq(transcripts.meetingId, hidden));
    expect(hiddenTranscript?.notes).toBe("Machine summary");
  });
});

describe("GET /meetings/{meeting_id}/transcript", () => {
  it("returns the verbatim text", async () => {
    const res = await api(t.app, "GET", `/api/v1/meetings/${topId("All hands")}/transcript`, {
      token: reader,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ status: "ready", text: "Ada: hello.", truncated: false });
  });

  it("keeps exactly 200000 characters whole and cuts 200001 to 200000", async () => {
    await setTranscript(t.db, { meetingId: topId("Transcript exact"), text: "a".repeat(200_000) });
    await setTranscript(t.db, {
      meetingId: topId("Transcript over"),
      text: `${"b".repeat(200_000)}c`,
    });
    const exact = await api(
      t.app,
      "GET",
      `/api/v1/meetings/${topId("Transcript exact")}/transcript`,
      { token: reader },
    );
    expect(exact.body.data.truncated).toBe(false);
    expect(exact.body.data.text).toBe("a".repeat(200_000));
    const over = await api(
      t.app,
      "GET",
      `/api/v1/meetings/${topId("Transcript over")}/transcript`,
      {
        token: reader,
      },
    );
    expect(over.body.data.truncated).toBe(true);
    expect(over.body.data.text).toBe("b".repeat(200_000));
  });

  it("counts code points, so a surrogate pair is never split", async () => {
    const meetingId = topId("Transcript pairs");
    // 200001 code points, 400001 UTF-16 units: the cut falls after the 199999th emoji.
    await setTranscript(t.db, { meetingId, text: `a${"😀".repeat(200_000)}` });
    const res = await api(t.app, "GET", `/api/v1/meetings/${meetingId}/transcript`, {
      token: reader,
    });
    expect(res.body.data.truncated).toBe(true);
    expect(res.body.data.text).toBe(`a${"😀".repeat(199_999)}`);
    // Exactly 200000 code points of astral characters are not cut.
    await setTranscript(t.db, { meetingId, text: "😀".repeat(200_000) });
    const whole = await api(t.app, "GET", `/api/v1/meetings/${meetingId}/transcript`, {
      token: reader,
    });
    expect(whole.body.data).toEqual({
      status: "ready",
      text: "😀".repeat(200_000),
      truncated: false,
    });
  });

  it("answers 404 for a visible meeting without a transcript", async () => {
    const res = await api(t.app, "GET", `/api/v1/meetings/${topId("Tie one")}/transcript`, {
      token: reader,
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      ok: false,
      error: "not_found",
      message: "This meeting has no transcript",
    });
  });
});

describe("scopes", () => {
  const routes: [string, string, Scope, unknown][] = [
    ["GET", "/meetings", "meetings:read", undefined],
    ["GET", "/projects/rover/meetings", "meetings:read", undefined],
    ["GET", "/meetings/{id}", "meetings:read", undefined],
    ["GET", "/meetings/{id}/transcript", "meetings:read", undefined],
    ["POST", "/meetings/{id}/minutes", "meetings:write", { markdown: "x" }],
    ["POST", "/meetings/{id}/notes", "meetings:write", { notes: "x" }],
  ];

  it.each(routes)("%s %s needs %s", async (method, path, scope, body) => {
    const url = `/api/v1${path.replace("{id}", topId("All hands"))}`;
    const without = await tokenWithout(t, acme, scope, [
      "meetings:read",
      "meetings:write",
      "pages:write",
    ]);
    expectInsufficientScope(
      await api(t.app, method as "GET" | "POST", url, { token: without, body }),
    );
    if (method === "GET") {
      const allowed = await api(t.app, "GET", url, { token: await mintToken(t.db, acme, [scope]) });
      expect(allowed.status).toBe(200);
    }
  });

  it("answers 401 without a token", async () => {
    const res = await api(t.app, "GET", "/api/v1/meetings");
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_token");
  });
});

describe("POST /meetings/{meeting_id}/minutes", () => {
  const url = () => `/api/v1/meetings/${topId("Minutes target")}/minutes`;

  it("replaces the minutes by default, attributed to the token's user, with its event", async () => {
    const meetingId = topId("Minutes target");
    const res = await api(t.app, "POST", url(), {
      token: writer,
      body: { markdown: "# Decisions\n\n1. ship\n2. test" },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: meetingId, updatedAt: expect.any(String) });

    const detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data).toMatchObject({
      hasMinutes: true,
      minutesText: "Decisions\n\n1. ship\n2. test",
      minutesUpdatedAt: res.body.data.updatedAt,
    });
    const [row] = await t.db
      .select({ by: meetings.minutesUpdatedBy })
      .from(meetings)
      .where(eq(meetings.id, meetingId));
    expect(row?.by).toBe(acme.users[1]!.id);

    await expectOneEventFor(
      t.db,
      meetingId,
      writerEvent(meetingId, "minutes_updated", {
        before: { minutesText: "" },
        after: { minutesText: "Decisions\n\n1. ship\n2. test" },
      }),
    );
  });

  it("appends below a divider, and replace discards", async () => {
    const meetingId = topId("Minutes target");
    await api(t.app, "POST", url(), {
      token: writer,
      body: { markdown: "- later", mode: "append" },
    });
    let detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data.minutesText).toBe("Decisions\n\n1. ship\n2. test\n\n---\n\n- later");
    const events = await eventsFor(meetingId);
    expect(events.at(-1)?.diff).toEqual({
      before: { minutesText: "Decisions\n\n1. ship\n2. test" },
      after: { minutesText: "Decisions\n\n1. ship\n2. test\n\n---\n\n- later" },
    });

    await api(t.app, "POST", url(), {
      token: writer,
      body: { markdown: "Fresh", mode: "replace" },
    });
    detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data.minutesText).toBe("Fresh");

    await api(t.app, "POST", url(), { token: writer, body: { markdown: "" } });
    detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data).toMatchObject({ minutesText: "", hasMinutes: false });
  });

  it("refuses minutes nested too deeply, naming the line, and leaves them alone", async () => {
    const meetingId = topId("Minutes target");
    const before = (await eventsFor(meetingId)).length;
    const res = await api(t.app, "POST", url(), {
      token: writer,
      body: { markdown: `Agenda\n${"> ".repeat(40)}deep` },
    });
    expectInvalidRequest(res, expect.stringMatching(/^markdown: line 2 is nested too deeply/));
    expect(await eventsFor(meetingId)).toHaveLength(before);
  });

  it("writes nothing, keeps minutesUpdatedAt and records no event when the minutes come out equal", async () => {
    const meetingId = topId("Minutes target");
    const first = await api(t.app, "POST", url(), { token: writer, body: { markdown: "Same" } });
    expect(first.status).toBe(200);
    const stored = await t.db.select().from(meetings).where(eq(meetings.id, meetingId));
    const count = (await eventsFor(meetingId)).length;
    for (const body of [{ markdown: "Same" }, { markdown: "", mode: "append" }]) {
      const res = await api(t.app, "POST", url(), { token: writer, body });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual(first.body.data);
      expect(await t.db.select().from(meetings).where(eq(meetings.id, meetingId))).toEqual(stored);
    }
    expect(await eventsFor(meetingId)).toHaveLength(count);
    const res = await api(
      t.app,
      "POST",
      "/api/v1/meetings/00000000-0000-4000-8000-000000000000/minutes",
      { token: writer, body: { mode: "append" } },
    );
    expect(res.status).toBe(400);
  });

  it("answers updatedAt null when a meeting that never had minutes gets empty ones", async () => {
    const meetingId = topId("Transcript exact");
    const res = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/minutes`, {
      token: writer,
      body: { markdown: "" },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: meetingId, updatedAt: null });
    expect(await eventsFor(meetingId)).toEqual([]);
  });
});

describe("POST /meetings/{meeting_id}/notes", () => {
  it("replaces the notes, marks them human-authored, attributes them and records the event", async () => {
    const meetingId = topId("Notes target");
    const transcriptId = acme.meetings.find((m) => m.title === "Notes target")?.transcript?.id;
    const res = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
      token: writer,
      body: { notes: "Written by Max" },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ transcriptId });

    const detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data.transcript).toEqual({
      id: transcriptId,
      status: "ready",
      notes: "Written by Max",
      notesStatus: "ready",
      notesSource: "human",
      hasFullText: true,
    });
    const [row] = await t.db
      .select({ by: transcripts.notesUpdatedBy })
      .from(transcripts)
      .where(eq(transcripts.meetingId, meetingId));
    expect(row?.by).toBe(acme.users[1]!.id);
    await expectOneEventFor(
      t.db,
      meetingId,
      writerEvent(meetingId, "notes_updated", {
        before: { notes: "Machine summary", notesSource: "ai" },
        after: { notes: "Written by Max", notesSource: "human" },
      }),
    );

    // The same human notes again change nothing: no write, no event.
    const stored = await t.db.select().from(transcripts).where(eq(transcripts.id, transcriptId!));
    const again = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
      token: writer,
      body: { notes: "Written by Max" },
    });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ transcriptId });
    expect(await eventsFor(meetingId)).toHaveLength(1);
    expect(await t.db.select().from(transcripts).where(eq(transcripts.id, transcriptId!))).toEqual(
      stored,
    );
  });

  it("refuses a meeting without a transcript with 400", async () => {
    const meetingId = topId("No transcript");
    const res = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
      token: writer,
      body: { notes: "x" },
    });
    expectInvalidRequest(res, expect.stringContaining("has no transcript"));
    expect(await eventsFor(meetingId)).toEqual([]);
    expect(await t.db.$count(transcripts, eq(transcripts.meetingId, meetingId))).toBe(0);
  });

  it.each([
    [{}, /^notes: /],
    [{ notes: null }, /^notes: /],
    [{ notes: "x", notesSource: "ai" }, /^notesSource: unknown field$/],
    [{ notes: "x\u0000" }, /^notes: must not contain NUL/],
  ])("refuses %j with 400 naming the field", async (body, message) => {
    const meetingId = topId("Notes target");
    const before = await eventsFor(meetingId);
    const res = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
      token: writer,
      body,
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(message);
    expect(await eventsFor(meetingId)).toEqual(before);
  });
});

describe("the human-notes guard", () => {
  it("lets a transcript job write notes until a member writes some, then keeps the member's", async () => {
    const meetingId = topId("Guard target");
    const created = await setTranscript(t.db, {
      meetingId,
      text: "First take",
      notes: "AI summary 1",
    });
    expect(created).toMatchObject({ created: true, notesWritten: true });
    let detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data.transcript).toEqual({
      id: created.transcriptId,
      status: "ready",
      notes: "AI summary 1",
      notesStatus: "ready",
      notesSource: "ai",
      hasFullText: true,
    });

    // Before any human note, a later job replaces the machine notes.
    const second = await setTranscript(t.db, {
      meetingId,
      text: "Second take",
      notes: "AI summary 2",
    });
    expect(second).toEqual({
      transcriptId: created.transcriptId,
      created: false,
      notesWritten: true,
    });

    const human = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
      token: writer,
      body: { notes: "Human notes" },
    });
    expect(human.status).toBe(200);

    const third = await setTranscript(t.db, {
      meetingId,
      text: "Third take",
      status: "reprocessed",
      notes: "AI summary 3",
    });
    expect(third.notesWritten).toBe(false);
    detail = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });
    expect(detail.body.data.transcript).toMatchObject({
      status: "reprocessed",
      notes: "Human notes",
      notesSource: "human",
      notesStatus: "ready",
    });
    const text = await api(t.app, "GET", `/api/v1/meetings/${meetingId}/transcript`, {
      token: reader,
    });
    expect(text.body.data).toEqual({ status: "reprocessed", text: "Third take", truncated: false });
    const [row] = await t.db
      .select({ by: transcripts.notesUpdatedBy })
      .from(transcripts)
      .where(eq(transcripts.meetingId, meetingId));
    expect(row?.by).toBe(acme.users[1]!.id);
  });

  it("never loses a member's notes to a job running at the same time", async () => {
    const meetingId = topId("Guard target");
    for (let round = 0; round < 10; round++) {
      await t.db
        .update(transcripts)
        .set({ notes: "machine", notesSource: "ai" })
        .where(eq(transcripts.meetingId, meetingId));
      const [job, res] = await Promise.all([
        setTranscript(t.db, { meetingId, text: `take ${round}`, notes: `AI ${round}` }),
        api(t.app, "POST", `/api/v1/meetings/${meetingId}/notes`, {
          token: writer,
          body: { notes: `Human ${round}` },
        }),
      ]);
      expect(res.status).toBe(200);
      const [row] = await t.db
        .select({ notes: transcripts.notes, source: transcripts.notesSource })
        .from(transcripts)
        .where(eq(transcripts.meetingId, meetingId));
      expect(row).toEqual({ notes: `Human ${round}`, source: "human" });
      expect(typeof job.notesWritten).toBe("boolean");
    }
  });
});

describe("setTranscript", () => {
  it("creates a transcript on any meeting, restricted or private, without notes by default", async () => {
    const written = await setTranscript(t.db, { meetingId: topId("Tie two"), text: "Words" });
    expect(written).toMatchObject({ created: true, notesWritten: false });
    const [row] = await t.db
      .select()
      .from(transcripts)
      .where(eq(transcripts.id, written.transcriptId));
    expect(row).toMatchObject({
      status: "ready",
      text: "Words",
      notes: null,
      notesStatus: "none",
      notesSource: null,
    });
    // The application's own path ignores the API's visibility rules.
    const board = await setTranscript(t.db, { meetingId: hidden, text: "Private words" });
    expect(board).toMatchObject({ created: false, notesWritten: false });
    const [hiddenRow] = await t.db
      .select({ notes: transcripts.notes, text: transcripts.text })
      .from(transcripts)
      .where(eq(transcripts.meetingId, hidden));
    expect(hiddenRow).toEqual({ notes: "Machine summary", text: "Private words" });
  });

  it("refuses an unknown or malformed meeting id and unstorable text", async () => {
    await expect(
      setTranscript(t.db, { meetingId: "00000000-0000-4000-8000-000000000000", text: "x" }),
    ).rejects.toThrow(/No meeting with id/);
    await expect(setTranscript(t.db, { meetingId: "nope", text: "x" })).rejects.toThrow(
      /No meeting with id nope/,
    );
    await expect(
      setTranscript(t.db, { meetingId: topId("Tie two"), text: "a\u0000b" }),
    ).rejects.toThrow(/text: must not contain NUL/);
  });

  it("records no change event (it is not an API write)", async () => {
    const meetingId = topId("Tie two");
    await setTranscript(t.db, { meetingId, text: "Again", notes: "n" });
    expect(await eventsFor(meetingId)).toEqual([]);
  });
});

describe("writes by a token without an author", () => {
  it("are refused with 400 and change nothing", async () => {
    const orphan = await mintToken(t.db, acme, ["meetings:read", "meetings:write"], 2);
    await removeMember(t.db, systemAudit, { orgSlug: "acme", email: "leaver@acme.example" });
    const meetingId = topId("Author target");
    const before = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: reader });

    for (const [suffix, body] of [
      ["minutes", { markdown: "# new" }],
      ["notes", { notes: "new" }],
    ] as const) {
      const res = await api(t.app, "POST", `/api/v1/meetings/${meetingId}/${suffix}`, {
        token: orphan,
        body,
      });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: "invalid_request" });
      expect(res.body.message).toMatch(/No author stands behind this token/);
    }
    // It can still read.
    const after = await api(t.app, "GET", `/api/v1/meetings/${meetingId}`, { token: orphan });
    expect(after.body.data).toEqual(before.body.data);
    expect(await eventsFor(meetingId)).toEqual([]);
    expect(
      await t.db.$count(
        changeEvents,
        and(
          eq(changeEvents.organizationId, acme.organization.id),
          eq(changeEvents.actorId, acme.users[2]!.id),
        ),
      ),
    ).toBe(0);
  });
});

describe("query counts", () => {
  it("reads with a fixed number of queries, whatever the number of meetings", async () => {
    const pool = new pg.Pool({ connectionString: t.config.databaseUrl, max: 1 });
    const statements: string[] = [];
    const db = drizzle(pool, {
      casing: "snake_case",
      logger: { logQuery: (query) => statements.push(query) },
    });
    const org = acme.organization.id;
    const count = async (read: () => Promise<unknown>) => {
      statements.length = 0;
      await read();
      return statements.length;
    };
    try {
      const all = startsAtRange({});
      expect(await count(() => listMeetings(db, org, all))).toBe(1);
      expect(await count(() => listProjectMeetings(db, org, "rover", all))).toBe(1);
      expect(await count(() => getMeeting(db, org, topId("All hands")))).toBe(1);
      expect(await count(() => getTranscript(db, org, topId("All hands")))).toBe(1);
    } finally {
      await pool.end();
    }
  });
});
