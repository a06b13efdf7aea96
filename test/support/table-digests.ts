import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../src/db/client.js";

// Tables a refused request may write without having changed anything: the browser sessions (a
// page leaves its CSRF secret and notices there) and the failed-authentication counters.
const BOOKKEEPING_TABLES = new Set(["sessions", "auth_failures"]);
// Columns a read updates: a token's last use.
const BOOKKEEPING_COLUMNS = ["last_used_at"];

/** The statement that digests every table, built once per database (its tables do not change). */
const statements = new WeakMap<Db, Promise<ReturnType<typeof sql.join>>>();

async function digestStatement(db: Db) {
  const ignored = sql.raw(`array[${BOOKKEEPING_COLUMNS.map((name) => `'${name}'`).join(", ")}]`);
  const tables = rowsOf<{ name: string; bookkeeping: boolean }>(
    await db.execute(sql`
      select t.table_name as name, exists (
          select from information_schema.columns c
          where c.table_schema = t.table_schema and c.table_name = t.table_name
            and c.column_name = any(${ignored}::text[])
        ) as bookkeeping
      from information_schema.tables t
      where t.table_schema = current_schema() and t.table_type = 'BASE TABLE'
      order by t.table_name`),
  ).filter((table) => !BOOKKEEPING_TABLES.has(table.name));
  // A row inserted, updated or deleted changes its table's count or newest row version (xmin);
  // a table with bookkeeping columns is digested row by row without them instead.
  const digests = tables.map(({ name, bookkeeping }) =>
    bookkeeping
      ? sql`
          select ${name}::text as name,
            md5(coalesce(string_agg(row_text, ',' order by row_text), '')) as digest
          from (select (to_jsonb(t) - ${ignored}::text[])::text as row_text
                from ${sql.identifier(name)} t) rows_of_table`
      : sql`
          select ${name}::text as name,
            count(*)::text || '/' || coalesce(max(t.xmin::text::bigint), 0)::text as digest
          from ${sql.identifier(name)} t`,
  );
  return sql.join(digests, sql` union all `);
}

/**
 * A digest of every table of the database (bookkeeping left out), by table: two snapshots are
 * equal exactly when nothing was inserted, updated or deleted in between.
 */
export async function tableDigests(db: Db): Promise<Record<string, string>> {
  let statement = statements.get(db);
  if (statement === undefined) {
    statement = digestStatement(db);
    statements.set(db, statement);
  }
  const rows = rowsOf<{ name: string; digest: string }>(await db.execute(await statement));
  return Object.fromEntries(rows.map((row) => [row.name, row.digest]));
}
