import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../src/db/client.js";

// Tables a refused request may write without having changed anything: the browser sessions (a
// page leaves its CSRF secret and notices there) and the failed-authentication counters.
const BOOKKEEPING_TABLES = new Set(["sessions", "auth_failures"]);
// Columns a read updates: a token's last use.
const BOOKKEEPING_COLUMNS = ["last_used_at"];

/**
 * A digest of every row of every table of the database (bookkeeping left out), by table: two
 * snapshots are equal exactly when nothing was inserted, updated or deleted in between.
 */
export async function tableDigests(db: Db): Promise<Record<string, string>> {
  const tables = rowsOf<{ name: string }>(
    await db.execute(sql`
      select table_name as name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'
      order by table_name`),
  ).filter((table) => !BOOKKEEPING_TABLES.has(table.name));
  const ignored = sql.raw(`array[${BOOKKEEPING_COLUMNS.map((name) => `'${name}'`).join(", ")}]`);
  const digests = tables.map(
    ({ name }) => sql`
      select ${name}::text as name,
        md5(coalesce(string_agg(row_text, ',' order by row_text), '')) as digest
      from (select (to_jsonb(t) - ${ignored}::text[])::text as row_text
            from ${sql.identifier(name)} t) rows_of_table`,
  );
  const rows = rowsOf<{ name: string; digest: string }>(
    await db.execute(sql.join(digests, sql` union all `)),
  );
  return Object.fromEntries(rows.map((row) => [row.name, row.digest]));
}
