import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import type { Database } from "../../src/db/client.js";
import { openPostgres, type PostgresOptions } from "../../src/db/postgres.js";
import { adminQuery, databaseUrl } from "./template-database.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The database global-setup.ts migrated once, which every test file's database copies. */
    templateDatabase: string;
  }
}

/**
 * Pools of the in-process apps: small, and patient with the wait for a connection, since the
 * suite's files share two cores with browsers and worker processes (fault tests use the
 * service's own defaults).
 */
export const TEST_POOL = { poolSize: 5, connectTimeoutMs: 30_000 };

export type TestDatabase = { database: Database; url: string; drop(): Promise<void> };

/**
 * A fresh database with the real migrations applied, owned by one test file: a copy of the
 * suite's migrated template, much quicker than migrating again. Nothing is connected to it yet.
 */
async function copyTemplateDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `ws_test_${randomBytes(6).toString("hex")}`;
  await adminQuery(`create database ${name} template ${inject("templateDatabase")}`);
  return {
    url: databaseUrl(name),
    drop: () => adminQuery(`drop database if exists ${name} with (force)`),
  };
}

/** A fresh migrated database owned by one test file, and a pool on it. */
export async function createTestDatabase(options: PostgresOptions = {}): Promise<TestDatabase> {
  const copy = await copyTemplateDatabase();
  const database = openPostgres(copy.url, { ...TEST_POOL, ...options });
  return {
    database,
    url: copy.url,
    async drop() {
      await database.close();
      await copy.drop();
    },
  };
}
