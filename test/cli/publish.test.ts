import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeEvents, componentVersions, specVersions } from "../../src/db/schema/index.js";
import { runCli, runCliJson } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { importFixture, type Workspace, workspaceDocument } from "../support/fixtures.js";

let testDb: TestDatabase;
let env: Record<string, string>;
let acme: Workspace;

const componentVersion = (version: string, healthStatus = "ok") => ({
  version,
  status: "published",
  lifecycleStage: "production",
  healthStatus,
});

beforeAll(async () => {
  testDb = await createTestDatabase();
  env = { DATABASE_URL: testDb.url };
  acme = await importFixture(
    testDb.database.db,
    workspaceDocument("acme", {
      projects: [
        {
          slug: "rover",
          name: "Rover",
          status: "active",
          // The CLI is the application's own path: a private project is fine.
          visibility: "private",
          specs: [
            {
              slug: "mass",
              name: "Mass",
              versions: [{ version: "1", status: "published", value: 12.5 }],
            },
          ],
          components: [
            {
              slug: "wheel",
              name: "Wheel",
              dependsOn: ["spec:mass"],
              versions: [componentVersion("1")],
            },
            {
              slug: "hub",
              name: "Hub",
              dependsOn: ["component:wheel"],
              versions: [componentVersion("1")],
            },
          ],
        },
      ],
    }),
  );
});
afterAll(() => testDb.drop());

const db = () => testDb.database.db;

async function totals() {
  const [specRows] = await db().select({ n: count() }).from(specVersions);
  const [componentRows] = await db().select({ n: count() }).from(componentVersions);
  const [events] = await db().select({ n: count() }).from(changeEvents);
  return { specVersions: specRows?.n, componentVersions: componentRows?.n, events: events?.n };
}

async function latestHealth(componentSlug: string) {
  const component = acme.projects[0]!.components.find((c) => c.slug === componentSlug)!;
  const rows = await db()
    .select({ version: componentVersions.version, healthStatus: componentVersions.healthStatus })
    .from(componentVersions)
    .where(eq(componentVersions.componentId, component.id));
  return Object.fromEntries(rows.map((row) => [row.version, row.healthStatus]));
}

const target = ["--org", "acme", "--project", "rover"];

describe("svc spec publish", () => {
  it("publishes the version, records spec.published and prints the ids with --json", async () => {
    const printed = await runCliJson(
      [
        "spec",
        "publish",
        ...target,
        "--spec",
        "mass",
        "--version",
        "2",
        "--value",
        '{"kg": 11.75, "note": null}',
        "--json",
      ],
      env,
    );
    expect(printed).toEqual({ id: expect.any(String), eventId: expect.any(Number) });

    const [version] = await db().select().from(specVersions).where(eq(specVersions.id, printed.id));
    expect(version).toMatchObject({
      version: "2",
      status: "published",
      value: { kg: 11.75, note: null },
    });
    expect(version?.publishedAt).toBeInstanceOf(Date);
    const [event] = await db()
      .select()
      .from(changeEvents)
      .where(eq(changeEvents.id, printed.eventId));
    expect(event).toMatchObject({
      organizationId: acme.organization.id,
      type: "spec.published",
      action: "published",
      targetKind: "specification",
      targetId: acme.projects[0]!.specs[0]!.id,
      // The CLI has no user.
      actorId: null,
      diff: {
        before: { value: 12.5 },
        after: { value: { kg: 11.75, note: null } },
      },
    });
    expect(await latestHealth("wheel")).toEqual({ "1": "stale" });
    expect(await latestHealth("hub")).toEqual({ "1": "ok" });
  });

  it("says what it did without --json", async () => {
    const res = await runCli(
      ["spec", "publish", ...target, "--spec", "mass", "--version", "3", "--value", '"heavy"'],
      env,
    );
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(
      /^Published spec mass version 3 \(version id [0-9a-f-]{36}, change event \d+\)\.\n/,
    );
    // wheel's latest was already stale.
    expect(res.stdout).toContain("No dependent component was marked stale.");
  });

  it("refuses on stderr with a non-zero exit and writes nothing", async () => {
    const before = await totals();
    const publish = (...flags: string[]) => runCli(["spec", "publish", ...flags], env);
    const refusals = [
      {
        run: publish(...target, "--spec", "mass", "--version", "4", "--value", "{oops"),
        code: 2,
        message: "--value must be valid JSON",
      },
      {
        run: publish(...target, "--spec", "mass", "--version", "2", "--value", "1"),
        code: 1,
        message:
          "version: spec mass already has a version 2 (published); publish a new version string",
      },
      {
        run: publish(...target, "--spec", "nope", "--version", "4", "--value", "1"),
        code: 1,
        message: "No spec with slug nope in project acme/rover",
      },
      {
        run: publish(
          "--org",
          "nope",
          "--project",
          "rover",
          "--spec",
          "mass",
          "--version",
          "4",
          "--value",
          "1",
        ),
        code: 1,
        message: "No organization with slug nope",
      },
      {
        run: publish(...target, "--spec", "mass", "--value", "1"),
        code: 2,
        message: "--version is required",
      },
      {
        run: publish(...target, "--spec", "mass", "--version", "4 ", "--value", "1"),
        code: 2,
        message: "--version must not start or end with whitespace",
      },
      {
        run: publish(...target, "--spec", "mass", "--version", "4", "--value", '{"a\\u0000": 1}'),
        code: 2,
        message: "--value must be a JSON value with finite numbers",
      },
      { run: runCli(["spec"], env), code: 2, message: "spec needs publish" },
    ];
    // The commands were started together; each is checked once it has exited.
    for (const { run, code, message } of refusals) {
      const res = await run;
      expect(res.stdout).toBe("");
      expect(res.stderr.split("\n")[0]).toContain(message);
      expect(res.code).toBe(code);
    }
    expect(await totals()).toEqual(before);
  });
});

describe("svc component publish", () => {
  it("publishes the version, records component.published and prints the ids with --json", async () => {
    const printed = await runCliJson(
      [
        "component",
        "publish",
        ...target,
        "--component",
        "wheel",
        "--version",
        "2",
        "--lifecycle-stage",
        "validation",
        "--health",
        "under-rated",
        "--json",
      ],
      env,
    );
    expect(printed).toEqual({ id: expect.any(String), eventId: expect.any(Number) });
    const [version] = await db()
      .select()
      .from(componentVersions)
      .where(eq(componentVersions.id, printed.id));
    expect(version).toMatchObject({
      version: "2",
      status: "published",
      lifecycleStage: "validation",
      healthStatus: "under-rated",
    });
    const [event] = await db()
      .select()
      .from(changeEvents)
      .where(eq(changeEvents.id, printed.eventId));
    expect(event).toMatchObject({
      type: "component.published",
      action: "published",
      targetKind: "component",
      targetId: acme.projects[0]!.components[0]!.id,
      actorId: null,
      diff: {
        before: {
          version: "1",
          status: "published",
          lifecycleStage: "production",
          healthStatus: "stale",
        },
        after: {
          version: "2",
          status: "published",
          lifecycleStage: "validation",
          healthStatus: "under-rated",
        },
      },
    });
    expect(await latestHealth("hub")).toEqual({ "1": "stale" });
  });

  it("refuses on stderr with a non-zero exit and writes nothing", async () => {
    const before = await totals();
    const publish = (...flags: string[]) => runCli(["component", "publish", ...flags], env);
    const component = [...target, "--component", "hub", "--lifecycle-stage", "production"];
    const refusals = [
      {
        run: publish(...component, "--version", "2", "--health", "fine"),
        code: 2,
        message: "--health must be one of ok, stale, under-rated, blocked",
      },
      {
        run: publish(...component, "--version", "1", "--health", "ok"),
        code: 1,
        message: "version: component hub already has a version 1 (published)",
      },
      {
        run: publish(
          "--org",
          "acme",
          "--project",
          "nope",
          "--component",
          "hub",
          "--version",
          "2",
          "--lifecycle-stage",
          "production",
          "--health",
          "ok",
        ),
        code: 1,
        message: "No project with slug nope in organization acme",
      },
      {
        run: publish(...target, "--component", "hub", "--version", "2", "--health", "ok"),
        code: 2,
        message: "--lifecycle-stage is required",
      },
      {
        run: publish(
          ...target,
          "--component",
          "hub",
          "--version",
          " 2",
          "--lifecycle-stage",
          "production ",
          "--health",
          "ok",
        ),
        code: 2,
        message:
          "--version must not start or end with whitespace; --lifecycle-stage must not start or end with whitespace",
      },
    ];
    // The commands were started together; each is checked once it has exited.
    for (const { run, code, message } of refusals) {
      const res = await run;
      expect(res.stdout).toBe("");
      expect(res.stderr.split("\n")[0]).toContain(message);
      expect(res.code).toBe(code);
    }
    expect(await totals()).toEqual(before);
  });
});
