import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidRequest, NotFound } from "../../src/core/errors.js";
import { changeEvents, componentVersions, specVersions } from "../../src/db/schema/index.js";
import type { ComponentHealth, SpecPublication } from "../../src/modules/publishing/schemas.js";
import {
  publishComponentVersion,
  publishSpecVersion,
} from "../../src/modules/publishing/service.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";

let t: TestApp;
let acme: Workspace;
let other: Workspace;
let token: string;

const publishedSpec = (version: string, value: unknown) => ({
  version,
  status: "published",
  value,
  publishedAt: "2026-01-01T00:00:00Z",
});
const component = (
  version: string,
  status = "published",
  healthStatus = "ok",
  lifecycleStage = "production",
) => ({ version, status, lifecycleStage, healthStatus });

beforeAll(async () => {
  t = await createTestApp();
  acme = await importOrganization(t.db, "acme", {
    projects: [
      project("rover", {
        specs: [
          {
            slug: "mass",
            name: "Mass",
            versions: [
              publishedSpec("1", 12.5),
              { version: "2-draft", status: "draft", value: "DRAFT" },
            ],
          },
          { slug: "power", name: "Power", versions: [publishedSpec("1", 100)] },
          { slug: "fresh", name: "Fresh" },
          { slug: "race", name: "Race" },
        ],
        components: [
          {
            slug: "wheel",
            name: "Wheel",
            dependsOn: ["spec:mass"],
            versions: [component("1.0"), component("1.1"), component("2.0-draft", "draft")],
          },
          // Depends on mass only through wheel: not a direct dependent.
          {
            slug: "hub",
            name: "Hub",
            dependsOn: ["component:wheel"],
            versions: [component("1")],
          },
          {
            slug: "arm",
            name: "Arm",
            dependsOn: ["spec:mass"],
            versions: [component("0.1", "draft")],
          },
          { slug: "mast", name: "Mast", versions: [component("1")] },
          {
            slug: "battery",
            name: "Battery",
            dependsOn: ["spec:power"],
            versions: [component("1")],
          },
          {
            slug: "gear",
            name: "Gear",
            versions: [component("1", "published", "under-rated", "design")],
          },
          {
            slug: "motor",
            name: "Motor",
            dependsOn: ["component:gear"],
            versions: [component("1"), component("2-draft", "draft")],
          },
          {
            slug: "sensor",
            name: "Sensor",
            dependsOn: ["spec:power", "component:gear"],
            versions: [component("1", "published", "blocked")],
          },
          {
            slug: "drive",
            name: "Drive",
            dependsOn: ["component:motor"],
            versions: [component("1")],
          },
          { slug: "fresh-part", name: "Fresh part" },
        ],
      }),
      project("secret", {
        visibility: "private",
        specs: [{ slug: "hidden", name: "Hidden", versions: [publishedSpec("1", 1)] }],
        components: [
          {
            slug: "watcher",
            name: "Watcher",
            dependsOn: ["spec:hidden"],
            versions: [component("1")],
          },
        ],
      }),
    ],
  });
  // Same slugs in another organisation: publishing in acme must not reach it.
  other = await importOrganization(t.db, "other", {
    projects: [
      project("rover", {
        specs: [{ slug: "mass", name: "Mass", versions: [publishedSpec("1", 1)] }],
        components: [
          {
            slug: "wheel",
            name: "Wheel",
            dependsOn: ["spec:mass"],
            versions: [component("1")],
          },
        ],
      }),
    ],
  });
  token = await mintToken(t.db, acme, ["specs:read", "components:read"]);
});
afterAll(() => t.close());

const acmeAdminId = () => acme.users[0]!.id;

function projectOf(workspace: Workspace, slug: string) {
  const project = workspace.projects.find((candidate) => candidate.slug === slug);
  if (project === undefined) throw new Error(`no project ${slug}`);
  return project;
}

function specId(slug: string, project = "rover", workspace = acme): string {
  const spec = projectOf(workspace, project).specs.find((candidate) => candidate.slug === slug);
  if (spec === undefined) throw new Error(`no spec ${slug}`);
  return spec.id;
}

function componentId(slug: string, project = "rover", workspace = acme): string {
  const found = projectOf(workspace, project).components.find(
    (candidate) => candidate.slug === slug,
  );
  if (found === undefined) throw new Error(`no component ${slug}`);
  return found.id;
}

/** Every version of a component as `version → healthStatus`, drafts included. */
async function healthOf(id: string): Promise<Record<string, ComponentHealth>> {
  const rows = await t.db
    .select({ version: componentVersions.version, healthStatus: componentVersions.healthStatus })
    .from(componentVersions)
    .where(eq(componentVersions.componentId, id));
  return Object.fromEntries(rows.map((row) => [row.version, row.healthStatus]));
}

async function eventRow(id: number) {
  const [row] = await t.db.select().from(changeEvents).where(eq(changeEvents.id, id));
  return row;
}

async function totals() {
  const [versions] = await t.db.select({ n: count() }).from(specVersions);
  const [componentRows] = await t.db.select({ n: count() }).from(componentVersions);
  const [events] = await t.db.select({ n: count() }).from(changeEvents);
  return { specVersions: versions?.n, componentVersions: componentRows?.n, events: events?.n };
}

async function listed(path: "specs" | "components", slug: string) {
  const res = await api(t.app, "GET", `/api/v1/projects/rover/${path}`, { token });
  expect(res.status).toBe(200);
  return res.body.data.find((item: { slug: string }) => item.slug === slug);
}

const rover = { organizationSlug: "acme", projectSlug: "rover" };

describe("publishSpecVersion", () => {
  it("publishes a version that becomes latest, with its spec.published event", async () => {
    expect((await listed("specs", "mass")).latest.version).toBe("1");
    const published = await publishSpecVersion(t.db, {
      ...rover,
      specSlug: "mass",
      version: "3",
      value: { max: 2, tags: ["a", null] },
      actorId: acmeAdminId(),
    });
    expect(published).toEqual({
      id: expect.any(String),
      eventId: expect.any(Number),
      markedStale: ["wheel"],
    });

    const [version] = await t.db
      .select()
      .from(specVersions)
      .where(eq(specVersions.id, published.id));
    expect(version).toMatchObject({
      specId: specId("mass"),
      version: "3",
      status: "published",
      value: { max: 2, tags: ["a", null] },
    });

    const latest = (await listed("specs", "mass")).latest;
    expect(latest).toEqual({
      version: "3",
      status: "published",
      value: { max: 2, tags: ["a", null] },
      publishedAt: expect.any(String),
    });

    const event = await eventRow(published.eventId);
    expect(event).toMatchObject({
      organizationId: acme.organization.id,
      type: "spec.published",
      action: "published",
      targetKind: "specification",
      targetId: specId("mass"),
      actorId: acmeAdminId(),
      fannedOutAt: null,
      // The draft "2-draft" was created after "1", but only published versions are latest.
      diff: {
        before: { value: 12.5 },
        after: { value: { max: 2, tags: ["a", null] } },
      },
    });
    // Published at the transaction's time, the instant the event occurred.
    expect(version?.publishedAt?.toISOString()).toBe(event?.occurredAt.toISOString());
    expect(latest.publishedAt).toBe(event?.occurredAt.toISOString());
  });

  it("marks stale only the latest published version of direct dependents", async () => {
    // Run after the publish of mass 3 above.
    expect(await healthOf(componentId("wheel"))).toEqual({
      "1.0": "ok",
      "1.1": "stale",
      "2.0-draft": "ok",
    });
    expect((await listed("components", "wheel")).latest).toMatchObject({
      version: "1.1",
      healthStatus: "stale",
    });
    // Transitive dependent, draft-only dependent, unrelated component, the other organisation.
    expect(await healthOf(componentId("hub"))).toEqual({ "1": "ok" });
    expect(await healthOf(componentId("arm"))).toEqual({ "0.1": "ok" });
    expect(await healthOf(componentId("mast"))).toEqual({ "1": "ok" });
    expect(await healthOf(componentId("wheel", "rover", other))).toEqual({ "1": "ok" });
    // The spec the other organisation calls mass keeps its latest.
    const [otherLatest] = await t.db
      .select({ n: count() })
      .from(specVersions)
      .where(eq(specVersions.specId, specId("mass", "rover", other)));
    expect(otherLatest?.n).toBe(1);
  });

  it("records an empty before for the first published version and stores JSON null", async () => {
    const published = await publishSpecVersion(t.db, {
      ...rover,
      specSlug: "fresh",
      version: "1",
      value: null,
    });
    expect(published.markedStale).toEqual([]);
    const event = await eventRow(published.eventId);
    expect(event).toMatchObject({
      type: "spec.published",
      targetId: specId("fresh"),
      actorId: null,
      diff: { before: { value: null }, after: { value: null } },
    });
    expect((await listed("specs", "fresh")).latest).toMatchObject({
      version: "1",
      status: "published",
      value: null,
    });
  });

  it("refuses an existing version string, published or draft, and writes nothing", async () => {
    const before = await totals();
    for (const version of ["1", "2-draft"]) {
      const attempt = publishSpecVersion(t.db, {
        ...rover,
        specSlug: "mass",
        version,
        value: 1,
      });
      await expect(attempt).rejects.toThrow(InvalidRequest);
      await expect(attempt).rejects.toThrow(`spec mass already has a version ${version}`);
    }
    await expect(
      publishSpecVersion(t.db, { ...rover, specSlug: "power", version: "1", value: 1 }),
    ).rejects.toThrow("version: spec power already has a version 1 (published)");
    expect(await totals()).toEqual(before);
    // The refused publish of power did not mark its dependents.
    expect(await healthOf(componentId("battery"))).toEqual({ "1": "ok" });
    expect((await listed("specs", "power")).latest.version).toBe("1");
  });

  it("lets exactly one of several concurrent publishes of the same version through", async () => {
    const before = await totals();
    // More attempts than the pool's five connections, so that several overlap.
    const attempts = await Promise.allSettled(
      Array.from({ length: 8 }, (_, value) =>
        publishSpecVersion(t.db, { ...rover, specSlug: "race", version: "1", value }),
      ),
    );
    const fulfilled = attempts.filter((attempt) => attempt.status === "fulfilled");
    const refusals = attempts.flatMap((attempt) =>
      attempt.status === "rejected" ? [attempt.reason as unknown] : [],
    );
    expect(fulfilled).toHaveLength(1);
    expect(refusals).toHaveLength(7);
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(InvalidRequest);
      expect((refusal as InvalidRequest).message).toBe(
        "version: spec race already has a version 1 (published); publish a new version string",
      );
    }
    const after = await totals();
    expect(after.specVersions).toBe((before.specVersions ?? 0) + 1);
    expect(after.events).toBe((before.events ?? 0) + 1);
  });

  it("publishes in a private project", async () => {
    const published = await publishSpecVersion(t.db, {
      organizationSlug: "acme",
      projectSlug: "secret",
      specSlug: "hidden",
      version: "2",
      value: 2,
    });
    expect(published.markedStale).toEqual(["watcher"]);
    expect(await healthOf(componentId("watcher", "secret"))).toEqual({ "1": "stale" });
    expect(await eventRow(published.eventId)).toMatchObject({
      targetId: specId("hidden", "secret"),
      diff: { before: { value: 1 }, after: { value: 2 } },
    });
  });

  it("names the unknown organisation, project or spec, and writes nothing", async () => {
    const before = await totals();
    const cases = [
      [{ ...rover, organizationSlug: "nope" }, "No organization with slug nope"],
      [{ ...rover, projectSlug: "nope" }, "No project with slug nope in organization acme"],
      [{ ...rover, specSlug: "nope" }, "No spec with slug nope in project acme/rover"],
      // A project of another organisation is unknown in this one.
      [
        { organizationSlug: "other", projectSlug: "secret" },
        "No project with slug secret in organization other",
      ],
    ] as const;
    for (const [target, message] of cases) {
      const attempt = publishSpecVersion(t.db, {
        specSlug: "mass",
        ...target,
        version: "99",
        value: 1,
      });
      await expect(attempt).rejects.toThrow(NotFound);
      await expect(attempt).rejects.toThrow(message);
    }
    expect(await totals()).toEqual(before);
  });

  it("refuses bad input with a message naming the field", async () => {
    const member = acme.users[1]!.id;
    const foreigner = other.users[0]!.id;
    const cases: [Partial<SpecPublication>, string][] = [
      [{ version: "" }, "version: must not be empty"],
      [{ version: " 4" }, "version: must not start or end with whitespace"],
      [{ version: "4\u0000" }, "version: must not contain NUL"],
      [{ value: { "a\u0000": 1 } }, "value: must be a JSON value"],
      [{ value: ["\ud800"] }, "value: must be a JSON value"],
      [{ actorId: "not-a-uuid" }, "actorId: not-a-uuid is not a current member"],
      [
        { actorId: foreigner },
        `actorId: ${foreigner} is not a current member of organization acme`,
      ],
    ];
    const before = await totals();
    for (const [change, message] of cases) {
      const attempt = publishSpecVersion(t.db, {
        ...rover,
        specSlug: "mass",
        version: "4",
        value: 4,
        ...change,
      });
      await expect(attempt).rejects.toThrow(InvalidRequest);
      await expect(attempt).rejects.toThrow(message);
    }
    expect(await totals()).toEqual(before);
    // A current member of the organisation may be the actor.
    const published = await publishSpecVersion(t.db, {
      ...rover,
      specSlug: "mass",
      version: "4",
      value: 4,
      actorId: member,
    });
    expect((await eventRow(published.eventId))?.actorId).toBe(member);
  });
});

describe("publishComponentVersion", () => {
  it("publishes a version with its component.published event and marks direct dependents stale", async () => {
    const published = await publishComponentVersion(t.db, {
      ...rover,
      componentSlug: "gear",
      version: "2",
      lifecycleStage: "production",
      healthStatus: "ok",
      actorId: acmeAdminId(),
    });
    expect(published).toEqual({
      id: expect.any(String),
      eventId: expect.any(Number),
      markedStale: ["motor", "sensor"],
    });
    expect((await listed("components", "gear")).latest).toEqual({
      version: "2",
      status: "published",
      lifecycleStage: "production",
      healthStatus: "ok",
    });
    expect(await eventRow(published.eventId)).toMatchObject({
      organizationId: acme.organization.id,
      type: "component.published",
      action: "published",
      targetKind: "component",
      targetId: componentId("gear"),
      actorId: acmeAdminId(),
      diff: {
        before: {
          version: "1",
          status: "published",
          lifecycleStage: "design",
          healthStatus: "under-rated",
        },
        after: {
          version: "2",
          status: "published",
          lifecycleStage: "production",
          healthStatus: "ok",
        },
      },
    });
    expect(await healthOf(componentId("gear"))).toEqual({ "1": "under-rated", "2": "ok" });
    expect(await healthOf(componentId("motor"))).toEqual({ "1": "stale", "2-draft": "ok" });
    expect(await healthOf(componentId("sensor"))).toEqual({ "1": "stale" });
    // Depends on gear only through motor.
    expect(await healthOf(componentId("drive"))).toEqual({ "1": "ok" });
  });

  it("records an empty before for a component's first published version", async () => {
    const published = await publishComponentVersion(t.db, {
      ...rover,
      componentSlug: "fresh-part",
      version: "0.1",
      lifecycleStage: "concept",
      healthStatus: "blocked",
    });
    expect(published.markedStale).toEqual([]);
    expect(await eventRow(published.eventId)).toMatchObject({
      type: "component.published",
      actorId: null,
      diff: {
        before: {},
        after: {
          version: "0.1",
          status: "published",
          lifecycleStage: "concept",
          healthStatus: "blocked",
        },
      },
    });
  });

  it("lets exactly one of several concurrent publishes of the same version through", async () => {
    const before = await totals();
    const attempts = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        publishComponentVersion(t.db, {
          ...rover,
          componentSlug: "mast",
          version: "2",
          lifecycleStage: "production",
          healthStatus: "ok",
        }),
      ),
    );
    const refusals = attempts.flatMap((attempt) =>
      attempt.status === "rejected" ? [attempt.reason as unknown] : [],
    );
    expect(refusals).toHaveLength(7);
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(InvalidRequest);
      expect((refusal as InvalidRequest).message).toBe(
        "version: component mast already has a version 2 (published); publish a new version string",
      );
    }
    const after = await totals();
    expect(after.componentVersions).toBe((before.componentVersions ?? 0) + 1);
    expect(after.events).toBe((before.events ?? 0) + 1);
  });

  it("refuses an existing version, unknown targets and bad input, writing nothing", async () => {
    const before = await totals();
    const base = {
      ...rover,
      componentSlug: "motor",
      version: "3",
      lifecycleStage: "production",
      healthStatus: "ok" as ComponentHealth,
    };
    const cases = [
      [
        { version: "2-draft" },
        InvalidRequest,
        "version: component motor already has a version 2-draft (draft)",
      ],
      [{ version: "1" }, InvalidRequest, "component motor already has a version 1 (published)"],
      [{ componentSlug: "nope" }, NotFound, "No component with slug nope in project acme/rover"],
      [{ projectSlug: "nope" }, NotFound, "No project with slug nope in organization acme"],
      [{ lifecycleStage: "" }, InvalidRequest, "lifecycleStage: must not be empty"],
      [
        { healthStatus: "fine" as ComponentHealth },
        InvalidRequest,
        "healthStatus: must be one of ok, stale, under-rated, blocked",
      ],
    ] as const;
    for (const [change, kind, message] of cases) {
      const attempt = publishComponentVersion(t.db, { ...base, ...change });
      await expect(attempt).rejects.toThrow(kind);
      await expect(attempt).rejects.toThrow(message);
    }
    expect(await totals()).toEqual(before);
    expect(await healthOf(componentId("drive"))).toEqual({ "1": "ok" });
  });
});
