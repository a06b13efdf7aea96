import type { PgTable } from "drizzle-orm/pg-core";
import type { Db } from "../../src/db/client.js";

/**
 * How many rows each table holds, under the names given: compare a snapshot taken before a
 * request with one taken after to see what the request wrote.
 */
export async function countRows<Tables extends Record<string, PgTable>>(
  db: Db,
  tables: Tables,
): Promise<{ [Name in keyof Tables]: number }> {
  const entries = await Promise.all(
    Object.entries(tables).map(async ([name, table]) => [name, await db.$count(table)] as const),
  );
  return Object.fromEntries(entries) as { [Name in keyof Tables]: number };
}
