import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Database } from "../../src/db/client.js";
import { openPostgres, type PostgresOptions } from "../../src/db/postgres.js";
import { TEST_DATABASE_URL } from "./env.js";

/**
 * Pools of the in-process apps: small, and patient with the wait for a connection, since the
 * suite's files share two cores with browsers and worker processes (fault tests use the
 * service's own defaults).
 */
export const TEST_POOL = { poolSize: 5, connectTimeoutMs: 30_000 };

export type TestDatabase = { database: Database; url: string; drop(): Promise<void> };

async function admin<T>(action: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

/** A fresh database with the real migrations applied, owned by one test file. */
export async function createTestDatabase(options: PostgresOptions = {}): Promise<TestDatabase> {
  const name = `ws_test_${randomBytes(6).toString("hex")}`;
  await admin((client) => client.query(`create database ${name}`));
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const database = openPostgres(url.toString(), { ...TEST_POOL, ...options });
  await database.migrate();
  return {
    database,
    url: url.toString(),
    async drop() {
      await database.close();
      await admin((client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}
