import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../src/db/client.js";
import { buildEmbeddedTemplate, openPglite } from "../../src/db/embedded.js";

// A fresh embedded DATA_DIR starts as a copy of the template `npm run build` prepares, instead
// of running initdb on the user's first start.

let scratch: string;
let template: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "embedded-template-"));
  template = await buildEmbeddedTemplate(path.join(scratch, "template"));
}, 120_000);
afterAll(() => rm(scratch, { recursive: true, force: true }));

const appliedMigrations = async (dir: string, options: { template?: string | null }) => {
  const database = await openPglite(dir, options);
  try {
    const applied = await database.db.execute(
      sql`select count(*)::int as n from drizzle.__drizzle_migrations`,
    );
    return rowsOf<{ n: number }>(applied)[0]?.n;
  } catch {
    return 0;
  } finally {
    await database.close();
  }
};

describe("the embedded database template", () => {
  it("holds every migration, so a fresh directory starting from it is ready at once", async () => {
    const fresh = path.join(scratch, "fresh");
    expect(await appliedMigrations(fresh, { template })).toBeGreaterThan(0);
  });

  it("never touches a directory that already holds a database", async () => {
    const existing = path.join(scratch, "existing");
    expect(await appliedMigrations(existing, { template: null })).toBe(0);
    expect(await appliedMigrations(existing, { template })).toBe(0);
  });
});
