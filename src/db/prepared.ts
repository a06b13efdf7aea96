import type { Db } from "./client.js";

/**
 * A query built once per database handle and sent as a named prepared statement: drizzle does
 * not rebuild its SQL on every call, and Postgres parses and plans it once per connection
 * (unnamed, parsed on each call, with DATABASE_PREPARED_STATEMENTS=false).
 * Values come in through `sql.placeholder`. The name must be unique to the query's text.
 */
export function prepared<Query>(build: (db: Db) => Query): (db: Db) => Query {
  const built = new WeakMap<Db, Query>();
  return (db) => {
    let query = built.get(db);
    if (query === undefined) {
      query = build(db);
      built.set(db, query);
    }
    return query;
  };
}
