import { and, count, eq, isNotNull, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allScopes } from "../../src/core/scopes.js";
import type { Db } from "../../src/db/client.js";
import {
  meetings,
  organizations,
  pages,
  projects,
  transcripts,
  users,
} from "../../src/db/schema/index.js";
import { seedDemo } from "../../src/demo/seed.js";
import { verifyPassword } from "../../src/modules/users/passwords.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { livePrincipal } from "../support/tokens.js";

let testDatabase: TestDatabase;
let db: Db;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  db = testDatabase.database.db;
});
afterAll(() => testDatabase.drop());

async function demoOrganizationId(): Promise<string> {
  const [organization] = await db
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.slug, "demo"));
  if (organization === undefined) throw new Error("the demo organization was not seeded");
  return organization.id;
}

describe("seedDemo", () => {
  let results: Awaited<ReturnType<typeof seedDemo>>[];

  beforeAll(async () => {
    // Two seeders racing, then a late one: the advisory lock lets exactly one write.
    results = await Promise.all([seedDemo(db), seedDemo(db)]);
    results.push(await seedDemo(db));
  });

  it("seeds once and writes nothing afterwards", async () => {
    expect(results.filter((result) => result.seeded)).toHaveLength(1);
    expect(results[2]).toEqual({ seeded: false });
    const [organizationCount] = await db
      .select({ n: count() })
      .from(organizations)
      .where(eq(organizations.slug, "demo"));
    expect(organizationCount?.n).toBe(1);
  });

  it("returns admin credentials that sign in", async () => {
    const seeded = results.find((result) => result.seeded);
    if (seeded === undefined || !seeded.seeded) throw new Error("nothing was seeded");
    expect(seeded).toMatchObject({ organizationSlug: "demo", adminEmail: "admin@demo.example" });
    expect(seeded.adminPassword).toMatch(/^[A-Za-z0-9_-]{16}$/);
    const [admin] = await db
      .select({ hash: users.passwordHash })
      .from(users)
      .where(sql`lower(${users.email}) = 'admin@demo.example'`);
    expect(await verifyPassword(admin?.hash ?? "", seeded.adminPassword)).toBe(true);
  });

  it("returns a token holding every scope, written as the admin", async () => {
    const seeded = results.find((result) => result.seeded);
    if (seeded === undefined || !seeded.seeded) throw new Error("nothing was seeded");
    const principal = await livePrincipal(db, seeded.token);
    expect(principal?.organization.slug).toBe("demo");
    expect(principal?.scopes).toEqual(allScopes);
    const [admin] = await db
      .select({ id: users.id })
      .from(users)
      .where(eq(users.email, "admin@demo.example"));
    expect(principal?.authorId).toBe(admin?.id);
  });

  it("seeds a workspace with one private project among several", async () => {
    const organizationId = await demoOrganizationId();
    const seededProjects = await db
      .select({ slug: projects.slug, visibility: projects.visibility })
      .from(projects)
      .where(eq(projects.organizationId, organizationId));
    expect(seededProjects.length).toBeGreaterThanOrEqual(3);
    expect(seededProjects.filter((project) => project.visibility === "private")).toHaveLength(1);
  });

  it("seeds nested pages, a restricted meeting and transcript notes", async () => {
    const organizationId = await demoOrganizationId();
    const [childPages] = await db
      .select({ n: count() })
      .from(pages)
      .innerJoin(projects, eq(projects.id, pages.projectId))
      .where(and(eq(projects.organizationId, organizationId), isNotNull(pages.parentId)));
    expect(childPages?.n).toBeGreaterThan(0);
    const [restricted] = await db
      .select({ n: count() })
      .from(meetings)
      .where(and(eq(meetings.organizationId, organizationId), eq(meetings.audience, "restricted")));
    expect(restricted?.n).toBe(1);
    const [notes] = await db
      .select({ n: count() })
      .from(transcripts)
      .innerJoin(meetings, eq(meetings.id, transcripts.meetingId))
      .where(
        and(eq(meetings.organizationId, organizationId), eq(transcripts.notesStatus, "ready")),
      );
    expect(notes?.n).toBe(1);
  });
});
