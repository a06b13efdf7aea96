import { and, asc, count, eq, isNull, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/client.js";
import {
  changeEvents,
  componentDependencies,
  components,
  documents,
  meetings,
  memberships,
  milestones,
  organizations,
  pageRevisions,
  pages,
  projects,
  specs,
  specVersions,
  tasks,
  transcripts,
  users,
} from "../../src/db/schema/index.js";
import { ImportError, importWorkspace } from "../../src/import/service.js";
import { verifyPassword } from "../../src/modules/users/passwords.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

let testDatabase: TestDatabase;
let db: Db;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  db = testDatabase.database.db;
});
afterAll(() => testDatabase.drop());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ADMIN_PASSWORD = "correct horse battery";

function fullDocument(slug: string) {
  return {
    organization: { slug, name: `Org ${slug}` },
    users: [
      {
        email: `admin@${slug}.example`,
        name: "Ada Admin",
        role: "admin",
        password: ADMIN_PASSWORD,
      },
      { email: `member@${slug}.example`, name: "Max Member", role: "member" },
    ],
    documents: [
      { category: "documentation", kind: "link", title: "Handbook", url: "https://example.com/h" },
      { category: "research", kind: "file", title: "Survey", filename: "s.pdf", byteSize: 10 },
    ],
    meetings: [
      {
        title: "All-hands",
        startsAt: "2026-01-15T16:00:00Z",
        durationMinutes: 60,
        status: "completed",
        locationType: "video",
        audience: "org",
        minutesMarkdown: "# Notes\n\n- one\n- two",
      },
      {
        startsAt: "2026-02-01T09:00:00+01:00",
        durationMinutes: 30,
        status: "scheduled",
        locationType: "room",
        audience: "restricted",
      },
    ],
    projects: [
      {
        slug: "arm",
        name: "Arm",
        status: "active",
        visibility: "org",
        startDate: "2026-01-01",
        specs: [
          {
            slug: "payload",
            name: "Payload",
            units: "kg",
            versions: [
              { version: "1", status: "published", value: 4, publishedAt: "2025-10-01T10:00:00Z" },
              { version: "2", status: "published", value: { max: 5, nominal: 4.5 } },
              { version: "3", status: "draft", value: [6] },
            ],
          },
        ],
        components: [
          {
            slug: "gripper",
            name: "Gripper",
            dependsOn: ["spec:payload"],
            versions: [
              { version: "A", status: "released", lifecycleStage: "evt", healthStatus: "ok" },
            ],
          },
          {
            slug: "board",
            name: "Board",
            dependsOn: ["component:gripper", "spec:payload"],
            versions: [
              { version: "r1", status: "draft", lifecycleStage: "evt", healthStatus: "blocked" },
            ],
          },
        ],
        milestones: [{ name: "EVT", kind: "gate", status: "done", targetDate: "2026-01-31" }],
        tasks: [
          { title: "Defaults only" },
          {
            title: "Assigned",
            status: "blocked",
            priority: "critical",
            start_date: "2026-02-01",
            due_date: "2026-03-01",
            blocked_reason: "parts",
            assignee_email: `MEMBER@${slug}.example`,
          },
        ],
        pages: [
          {
            title: "Overview",
            markdown: "# Overview\n\n- a\n  - nested",
            children: [
              { title: "Architecture", children: [{ title: "Wiring" }] },
              { title: "Safety", markdown: "Stop fast." },
            ],
          },
          { title: "Runbooks" },
        ],
        documents: [
          {
            category: "documentation",
            kind: "link",
            title: "Spec sheet",
            url: "http://x.example/s",
          },
        ],
        meetings: [
          {
            title: "Review",
            startsAt: "2026-02-10T14:00:00Z",
            durationMinutes: 50,
            status: "completed",
            locationType: "video",
            audience: "org",
            transcript: { status: "ready", text: "Hello." },
          },
          {
            startsAt: "2026-02-11T14:00:00Z",
            durationMinutes: 0,
            status: "completed",
            locationType: "video",
            audience: "org",
            transcript: { status: "ready", text: "Hi.", notes: "Short." },
          },
        ],
      },
      { slug: "dock", name: "Dock", status: "planning", visibility: "private" },
    ],
  };
}

type Imported = Awaited<ReturnType<typeof importWorkspace>>;

/** Every object of the echo except spec version values is something the import created. */
function objectsWithoutId(value: unknown, path = ""): string[] {
  if (Array.isArray(value))
    return value.flatMap((item, index) => objectsWithoutId(item, `${path}[${index}]`));
  if (typeof value !== "object" || value === null) return [];
  const entries = Object.entries(value).filter(([key]) => key !== "value");
  const own = "id" in value && UUID.test(String(value.id)) ? [] : [path || "document"];
  return [...own, ...entries.flatMap(([key, child]) => objectsWithoutId(child, `${path}.${key}`))];
}

async function countRows(table: typeof organizations | typeof users | typeof projects) {
  const [row] = await db.select({ n: count() }).from(table);
  return row?.n ?? 0;
}

describe("importWorkspace with a full document", () => {
  let imported: Imported;

  beforeAll(async () => {
    imported = await importWorkspace(db, fullDocument("full"));
  });

  function project(slug: string) {
    const found = imported.projects.find((candidate) => candidate.slug === slug);
    if (found === undefined) throw new Error(`no project ${slug} in the echo`);
    return found;
  }

  it("gives every created object an id, each one distinct", () => {
    const created = Object.values(imported).flat();
    expect(objectsWithoutId(created)).toEqual([]);
    const ids = JSON.stringify(imported).match(/"id":"[^"]+"/g) ?? [];
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(30);
  });

  it("echoes the document with defaults but never a password", () => {
    const echoed = JSON.stringify(imported);
    expect(echoed).not.toContain("password");
    expect(echoed).not.toContain(ADMIN_PASSWORD);
    expect(imported.users.map((user) => Object.keys(user).sort())).toEqual([
      ["email", "id", "name", "role"],
      ["email", "id", "name", "role"],
    ]);
    expect(project("arm").tasks[0]).toMatchObject({
      title: "Defaults only",
      status: "not_started",
    });
    expect(project("arm").pages[0]?.children[0]?.children[0]?.title).toBe("Wiring");
  });

  it("creates the organisation, its members and hashes the given password", async () => {
    const [organization] = await db
      .select()
      .from(organizations)
      .where(eq(organizations.slug, "full"));
    expect(organization?.id).toBe(imported.organization.id);
    const members = await db
      .select({ email: users.email, role: memberships.role, hash: users.passwordHash })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(eq(memberships.organizationId, imported.organization.id))
      .orderBy(asc(users.email));
    expect(members.map(({ email, role }) => [email, role])).toEqual([
      ["admin@full.example", "admin"],
      ["member@full.example", "member"],
    ]);
    expect(members[0]?.hash).toMatch(/^\$argon2id\$/);
    expect(await verifyPassword(members[0]?.hash ?? "", ADMIN_PASSWORD)).toBe(true);
    expect(members[1]?.hash).toBeNull();
  });

  it("stores projects, lineages and their dependencies", async () => {
    const stored = await db
      .select({
        slug: projects.slug,
        visibility: projects.visibility,
        startDate: projects.startDate,
      })
      .from(projects)
      .where(eq(projects.organizationId, imported.organization.id))
      .orderBy(asc(projects.slug));
    expect(stored).toEqual([
      { slug: "arm", visibility: "org", startDate: "2026-01-01" },
      { slug: "dock", visibility: "private", startDate: null },
    ]);
    const armId = project("arm").id;
    const dependencies = await db
      .select({
        spec: componentDependencies.dependsOnSpecId,
        component: componentDependencies.dependsOnComponentId,
      })
      .from(componentDependencies)
      .innerJoin(components, eq(components.id, componentDependencies.componentId))
      .where(eq(components.projectId, armId));
    const [spec] = project("arm").specs;
    const [gripper] = project("arm").components;
    expect(dependencies).toHaveLength(3);
    expect(dependencies).toContainEqual({ spec: null, component: gripper?.id });
    expect(dependencies.filter((dependency) => dependency.spec === spec?.id)).toHaveLength(2);
  });

  it("inserts versions oldest first and fills publication times", async () => {
    const specId = project("arm").specs[0]?.id ?? "";
    const versions = await db
      .select({
        version: specVersions.version,
        value: specVersions.value,
        publishedAt: specVersions.publishedAt,
      })
      .from(specVersions)
      .where(eq(specVersions.specId, specId))
      .orderBy(asc(specVersions.sequence));
    expect(versions.map((version) => [version.version, version.value])).toEqual([
      ["1", 4],
      ["2", { max: 5, nominal: 4.5 }],
      ["3", [6]],
    ]);
    expect(versions[0]?.publishedAt?.toISOString()).toBe("2025-10-01T10:00:00.000Z");
    // Published without a publishedAt in the file: none is made up.
    expect(versions[1]?.publishedAt).toBeNull();
    expect(versions[2]?.publishedAt).toBeNull();
  });

  it("stores tasks with defaults, due dates and resolved assignees", async () => {
    const stored = await db
      .select()
      .from(tasks)
      .where(eq(tasks.projectId, project("arm").id))
      .orderBy(asc(tasks.sequence));
    const member = imported.users.find((user) => user.role === "member");
    expect(
      stored.map((task) => [task.title, task.status, task.priority, task.dueDate, task.assignedTo]),
    ).toEqual([
      ["Defaults only", "not_started", "normal", null, null],
      ["Assigned", "blocked", "critical", "2026-03-01", member?.id],
    ]);
    expect(stored[1]).toMatchObject({
      startDate: "2026-02-01",
      blockedReason: "parts",
      createdBy: null,
    });
  });

  it("stores the page tree with parents, positions, bodies and one revision each", async () => {
    const stored = await db
      .select({
        id: pages.id,
        title: pages.title,
        parentId: pages.parentId,
        position: pages.position,
        body: pages.body,
      })
      .from(pages)
      .where(eq(pages.projectId, project("arm").id));
    const byTitle = new Map(stored.map((page) => [page.title, page]));
    const idOf = (title: string) => byTitle.get(title)?.id;
    expect(stored.map((page) => [page.title, page.parentId, page.position])).toEqual(
      expect.arrayContaining([
        ["Overview", null, 0],
        ["Runbooks", null, 1],
        ["Architecture", idOf("Overview"), 0],
        ["Safety", idOf("Overview"), 1],
        ["Wiring", idOf("Architecture"), 0],
      ]),
    );
    expect(stored).toHaveLength(5);
    expect(byTitle.get("Overview")?.body.content[0]).toMatchObject({ type: "heading" });
    expect(byTitle.get("Runbooks")?.body).toEqual({ type: "doc", content: [] });
    const revisions = await db
      .select({
        pageId: pageRevisions.pageId,
        title: pageRevisions.title,
        authorId: pageRevisions.authorId,
      })
      .from(pageRevisions)
      .innerJoin(pages, eq(pages.id, pageRevisions.pageId))
      .where(eq(pages.projectId, project("arm").id));
    expect(revisions).toHaveLength(5);
    expect(revisions.every((revision) => revision.authorId === null)).toBe(true);
  });

  it("files team-level and project documents", async () => {
    const stored = await db
      .select({
        title: documents.title,
        projectId: documents.projectId,
        uploadedBy: documents.uploadedBy,
      })
      .from(documents)
      .where(eq(documents.organizationId, imported.organization.id))
      .orderBy(asc(documents.sequence));
    expect(stored).toEqual([
      { title: "Handbook", projectId: null, uploadedBy: null },
      { title: "Survey", projectId: null, uploadedBy: null },
      { title: "Spec sheet", projectId: project("arm").id, uploadedBy: null },
    ]);
  });

  it("stores meetings with minutes and transcripts with note defaults", async () => {
    const stored = await db
      .select()
      .from(meetings)
      .where(eq(meetings.organizationId, imported.organization.id))
      .orderBy(asc(meetings.startsAt));
    expect(stored.map((meeting) => [meeting.title, meeting.projectId, meeting.audience])).toEqual([
      ["All-hands", null, "org"],
      [null, null, "restricted"],
      ["Review", project("arm").id, "org"],
      [null, project("arm").id, "org"],
    ]);
    expect(stored[0]?.minutes?.content[0]).toMatchObject({ type: "heading" });
    expect(stored[0]?.minutesUpdatedAt).toBeInstanceOf(Date);
    expect(stored[1]).toMatchObject({ minutes: null, minutesUpdatedAt: null });
    expect(stored[1]?.startsAt.toISOString()).toBe("2026-02-01T08:00:00.000Z");
    const storedTranscripts = await db
      .select({
        text: transcripts.text,
        notes: transcripts.notes,
        notesStatus: transcripts.notesStatus,
        notesSource: transcripts.notesSource,
      })
      .from(transcripts)
      .innerJoin(meetings, eq(meetings.id, transcripts.meetingId))
      .where(eq(meetings.projectId, project("arm").id))
      .orderBy(asc(meetings.startsAt));
    expect(storedTranscripts).toEqual([
      { text: "Hello.", notes: null, notesStatus: "none", notesSource: null },
      { text: "Hi.", notes: "Short.", notesStatus: "ready", notesSource: null },
    ]);
    expect(project("arm").meetings[0]?.transcript?.id).toMatch(UUID);
  });

  it("accepts null as a spec value", async () => {
    const document = fullDocument("null-value");
    setAt(document, ["projects", 0, "specs", 0, "versions", 0, "value"], null);
    const imported = await importWorkspace(db, document);
    const [version] = await db
      .select({ value: specVersions.value })
      .from(specVersions)
      .where(eq(specVersions.id, imported.projects[0]?.specs[0]?.versions[0]?.id ?? ""));
    expect(version).toEqual({ value: null });
  });

  it("counts what it created and records no change events", async () => {
    const milestoneCount = await db
      .select({ n: count() })
      .from(milestones)
      .where(eq(milestones.projectId, project("arm").id));
    expect(milestoneCount[0]?.n).toBe(1);
    const specCount = await db
      .select({ n: count() })
      .from(specs)
      .where(eq(specs.projectId, project("arm").id));
    expect(specCount[0]?.n).toBe(1);
    const events = await db.select({ n: count() }).from(changeEvents);
    expect(events[0]?.n).toBe(0);
  });
});

type JsonPath = readonly (string | number)[];

/** Replaces the value at `path` in a fixture, so each refusal shows where it breaks the file. */
function setAt(document: unknown, path: JsonPath, value: unknown): void {
  const parentPath = path.slice(0, -1);
  const key = path[path.length - 1];
  const parent = parentPath.reduce<unknown>((node, step) => {
    if (typeof node !== "object" || node === null) throw new Error(`no ${step} in the fixture`);
    return (node as Record<string | number, unknown>)[step];
  }, document);
  if (typeof parent !== "object" || parent === null || key === undefined) {
    throw new Error(`no ${path.join(".")} in the fixture`);
  }
  (parent as Record<string | number, unknown>)[key] = value;
}

const refusals: [string, JsonPath, unknown, string][] = [
  [
    "a bad enum at a nested path",
    ["projects", 0, "specs", 0, "versions", 2, "status"],
    "final",
    'projects[0].specs[0].versions[2].status: Invalid option: expected one of "draft"|"published"',
  ],
  [
    "an unknown key",
    ["projects", 0, "tasks", 0, "colour"],
    "red",
    "projects[0].tasks[0].colour: unknown field",
  ],
  [
    "a duplicate project slug",
    ["projects", 1, "slug"],
    "arm",
    "projects[1].slug: duplicate project slug arm (also at projects[0].slug)",
  ],
  [
    "an impossible date",
    ["projects", 0, "milestones", 0, "targetDate"],
    "2026-02-30",
    "projects[0].milestones[0].targetDate: expected a date as YYYY-MM-DD",
  ],
  [
    "a date-time without an offset",
    ["meetings", 0, "startsAt"],
    "2026-01-15T16:00:00",
    "meetings[0].startsAt: expected a date-time as ISO 8601 with seconds and Z or an offset, e.g. 2026-03-12T09:00:00Z",
  ],
  [
    "an assignee who is not one of the users",
    ["projects", 0, "tasks", 1, "assignee_email"],
    "nobody@elsewhere.example",
    "projects[0].tasks[1].assignee_email: nobody@elsewhere.example is not one of the document's users",
  ],
  [
    "a page title over 200 characters",
    ["projects", 0, "pages", 0, "children", 1, "title"],
    "x".repeat(201),
    "projects[0].pages[0].children[1].title: Too big",
  ],
  [
    "a one-character task title",
    ["projects", 0, "tasks", 0, "title"],
    "x",
    "projects[0].tasks[0].title: Too small",
  ],
  [
    "a link without a url",
    ["documents", 0, "url"],
    undefined,
    "documents[0].url: a link document needs an absolute http(s) URL",
  ],
  [
    "a link to a non-http url",
    ["documents", 0, "url"],
    "ftp://example.com/x",
    "documents[0].url: must be an absolute http(s) URL",
  ],
  [
    "a dependency on an unknown spec",
    ["projects", 0, "components", 0, "dependsOn"],
    ["spec:nope"],
    "projects[0].components[0].dependsOn[0]: no spec nope in project arm",
  ],
  [
    "a component depending on itself",
    ["projects", 0, "components", 1, "dependsOn"],
    ["component:board"],
    "projects[0].components[1].dependsOn[0]: a component cannot depend on itself",
  ],
  [
    "emails that differ only in case",
    ["users", 1, "email"],
    "ADMIN@refused.example",
    "users[1].email: duplicate email admin@refused.example",
  ],
  [
    "a duplicate spec version",
    ["projects", 0, "specs", 0, "versions", 1, "version"],
    "1",
    "projects[0].specs[0].versions[1].version: duplicate version 1",
  ],
  [
    "a publication time on a draft",
    ["projects", 0, "specs", 0, "versions", 2, "publishedAt"],
    "2026-01-01T00:00:00Z",
    "projects[0].specs[0].versions[2].publishedAt: a draft has no publication time",
  ],
  [
    "a slug with a space",
    ["organization", "slug"],
    "not a slug",
    "organization.slug: must be letters, digits, '.', '_' and '-', starting with a letter or digit",
  ],
  [
    "a NUL character the database cannot store",
    ["projects", 0, "specs", 0, "versions", 1, "value"],
    { note: "a\u0000b" },
    "projects[0].specs[0].versions[1].value.note: contains a NUL character",
  ],
  [
    "page markdown nested too deeply",
    ["projects", 0, "pages", 0, "markdown"],
    `${"- ".repeat(40)}x`,
    "projects[0].pages[0].markdown: line 1 is nested too deeply",
  ],
  [
    "a negative duration",
    ["meetings", 0, "durationMinutes"],
    -5,
    "meetings[0].durationMinutes: Too small",
  ],
];

describe("importWorkspace refuses a bad document", () => {
  it.each(refusals)(
    "names the path for %s and writes nothing",
    async (_name, path, value, expected) => {
      const document = fullDocument("refused");
      setAt(document, path, value);
      const before = [
        await countRows(organizations),
        await countRows(users),
        await countRows(projects),
      ];
      const refusal = importWorkspace(db, document);
      await expect(refusal).rejects.toBeInstanceOf(ImportError);
      await expect(refusal).rejects.toThrow(expected);
      const after = [
        await countRows(organizations),
        await countRows(users),
        await countRows(projects),
      ];
      expect(after).toEqual(before);
    },
  );

  it("refuses something that is not an object", async () => {
    await expect(importWorkspace(db, "nope")).rejects.toThrow("document: Invalid input");
  });

  it("rolls back everything when the database refuses a late row", async () => {
    // A trigger in this file's own database makes the last table of the import fail.
    await db.execute(sql`create function refuse_row() returns trigger language plpgsql
      as $$ begin raise exception 'refused by test trigger'; end $$`);
    await db.execute(sql`create trigger refuse_transcripts before insert on transcripts
      for each row execute function refuse_row()`);
    try {
      const before = [
        await countRows(organizations),
        await countRows(users),
        await countRows(projects),
      ];
      await expect(importWorkspace(db, fullDocument("late-failure"))).rejects.toThrow(
        /insert into "transcripts"/,
      );
      const after = [
        await countRows(organizations),
        await countRows(users),
        await countRows(projects),
      ];
      expect(after).toEqual(before);
    } finally {
      await db.execute(sql`drop trigger refuse_transcripts on transcripts`);
      await db.execute(sql`drop function refuse_row()`);
    }
  });

  it("refuses an organisation slug that exists, writing nothing", async () => {
    const document = fullDocument("taken");
    await importWorkspace(db, { organization: document.organization });
    const before = [
      await countRows(organizations),
      await countRows(users),
      await countRows(projects),
    ];
    await expect(importWorkspace(db, document)).rejects.toThrow(
      "organization.slug: organization taken already exists",
    );
    const after = [
      await countRows(organizations),
      await countRows(users),
      await countRows(projects),
    ];
    expect(after).toEqual(before);
  });
});

describe("importWorkspace with users that exist", () => {
  it("stores emails lower-cased and reuses a user by email, keeping its password", async () => {
    const first = await importWorkspace(db, {
      organization: { slug: "first", name: "First" },
      users: [
        {
          email: "Shared@Example.com",
          name: "Sam Shared",
          role: "admin",
          password: "first password",
        },
      ],
    });
    const second = await importWorkspace(db, {
      organization: { slug: "second", name: "Second" },
      users: [
        {
          email: " shared@example.com ",
          name: "Other Name",
          role: "member",
          password: "second password",
        },
      ],
    });
    expect(second.users[0]?.id).toBe(first.users[0]?.id);
    expect(first.users[0]?.email).toBe("shared@example.com");
    expect(second.users[0]?.email).toBe("shared@example.com");
    const stored = await db
      .select({ name: users.name, hash: users.passwordHash })
      .from(users)
      .where(sql`lower(${users.email}) = 'shared@example.com'`);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.name).toBe("Sam Shared");
    expect(await verifyPassword(stored[0]?.hash ?? "", "first password")).toBe(true);
    const roles = await db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.userId, first.users[0]?.id ?? ""), isNull(memberships.removedAt)))
      .orderBy(asc(memberships.role));
    expect(roles.map((row) => row.role)).toEqual(["admin", "member"]);
  });
});

describe("importWorkspace at scale", () => {
  it("imports more rows than one statement can carry, in order", async () => {
    const taskCount = 5_000;
    const imported = await importWorkspace(db, {
      organization: { slug: "large", name: "Large" },
      projects: [
        {
          slug: "big",
          name: "Big",
          status: "active",
          visibility: "org",
          tasks: Array.from({ length: taskCount }, (_, index) => ({ title: `Task ${index}` })),
        },
      ],
    });
    const stored = await db
      .select({ title: tasks.title })
      .from(tasks)
      .where(eq(tasks.projectId, imported.projects[0]?.id ?? ""))
      .orderBy(asc(tasks.sequence));
    expect(stored).toHaveLength(taskCount);
    expect(stored.map((task) => task.title)).toEqual(
      Array.from({ length: taskCount }, (_, index) => `Task ${index}`),
    );
  });
});
