import { randomBytes } from "node:crypto";
import pg from "pg";
import { openPostgres } from "../../src/db/postgres.js";
import { TEST_DATABASE_URL } from "./env.js";

/** One statement on the suite's Postgres server, outside any test database. */
export async function adminQuery(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** The URL of database `name` on the suite's Postgres server. */
export function databaseUrl(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Creates a database with the real migrations applied, for the suite's template. It then takes
 * no connections, since Postgres copies a template only while nobody is connected to it.
 */
export async function createMigratedTemplate(): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `ws_template_${randomBytes(6).toString("hex")}`;
  await adminQuery(`create database ${name}`);
  const database = openPostgres(databaseUrl(name), { poolSize: 1 });
  try {
    await database.migrate();
  } finally {
    await database.close();
  }
  await adminQuery(`alter database ${name} allow_connections false`);
  return { name, drop: () => adminQuery(`drop database if exists ${name} with (force)`) };
}
