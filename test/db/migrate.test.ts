import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/db/postgres.js";
import { runCli } from "../support/cli.js";
import { TEST_DATABASE_URL } from "../support/env.js";

/** Migrations on start: several instances at once, and the switch that turns them off. */
const name = `ws_test_${randomBytes(6).toString("hex")}`;
let url: string;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`create database ${name}`);
  const target = new URL(TEST_DATABASE_URL);
  target.pathname = `/${name}`;
  url = target.toString();
});
afterAll(() => admin(`drop database if exists ${name} with (force)`));

describe("migrations", () => {
  it("leave the database untouched with MIGRATE_ON_START=false", async () => {
    const res = await runCli(
      ["token", "create", "--org", "x", "--user", "a@x.example", "--scopes", "all"],
      {
        DATABASE_URL: url,
        MIGRATE_ON_START: "false",
      },
    );
    expect(res.code).not.toBe(0);
    const database = openPostgres(url);
    try {
      const tables = await database.db.execute("select to_regclass('public.organizations') as t");
      expect((tables as unknown as { rows: { t: string | null }[] }).rows[0]?.t).toBeNull();
    } finally {
      await database.close();
    }
  });

  it("apply once when several instances start together, queued on the advisory lock", async () => {
    const instances = [openPostgres(url), openPostgres(url), openPostgres(url)];
    try {
      await Promise.all(instances.map((instance) => instance.migrate()));
      const applied = await instances[0]!.db.execute(
        "select count(*)::int as n from drizzle.__drizzle_migrations",
      );
      const count = (applied as unknown as { rows: { n: number }[] }).rows[0]?.n;
      const { readdirSync } = await import("node:fs");
      expect(count).toBe(readdirSync("migrations").filter((file) => file.endsWith(".sql")).length);
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
    }
  });
});
