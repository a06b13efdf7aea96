import { type SQL, type SQLWrapper, sql } from "drizzle-orm";

/**
 * JSON text that Postgres wrote for a value of type T. A route sends it as it comes: the rows
 * are neither mapped into objects nor serialised again.
 */
export type JsonText<T> = string & { readonly jsonOf?: T };

/**
 * One JSON object per row of `from` that matches `where`, in `orderBy` order, as a JSON array:
 * keys in the order of `fields`, written as JSON.stringify writes them (no spaces), '[]' when
 * no row matches.
 */
export function jsonArrayOf<T>(
  fields: Record<keyof T & string, SQLWrapper>,
  rows: { from: SQLWrapper; where: SQL | undefined; orderBy: SQL[] },
): SQL<JsonText<T[]>> {
  const record = sql.join(
    Object.entries<SQLWrapper>(fields).map(
      ([key, value]) => sql`${value} as ${sql.identifier(key)}`,
    ),
    sql`, `,
  );
  // array_to_json, not json_agg: json_agg puts a space and a line break between elements.
  // Aggregating the rows of an ordered subquery keeps its order, as PostgREST relies on, and
  // spares Postgres a subquery per row.
  return sql`coalesce((select array_to_json(array_agg(r))::text from (select ${record} from ${rows.from} where ${rows.where} order by ${sql.join(rows.orderBy, sql`, `)}) r), '[]')`;
}

/** A timestamp as the API writes it, as Date#toISOString does: UTC, milliseconds, `Z`. */
export function isoDateTimeOf(column: SQLWrapper): SQL<string> {
  return sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
