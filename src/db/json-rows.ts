import { eq, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { Db } from "./client.js";
import { prepared } from "./prepared.js";
import { organizations } from "./schema/index.js";

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
  // array_to_json, not json_agg: json_agg puts a space and a line break between elements.
  // Aggregating the rows of an ordered subquery keeps its order, as PostgREST relies on, and
  // spares Postgres a subquery per row.
  return sql`coalesce((select array_to_json(array_agg(r))::text from (select ${recordOf(fields)} from ${rows.from} where ${rows.where} order by ${sql.join(rows.orderBy, sql`, `)}) r), '[]')`;
}

/**
 * One JSON object of `fields`, keys in their order, for a value nested in a row of
 * `jsonArrayOf`; row_to_json, not json_build_object, which puts spaces around each colon.
 */
export function jsonObjectOf<T>(fields: Record<keyof T & string, SQLWrapper>): SQL<T> {
  return sql`(select row_to_json(o) from (select ${recordOf(fields)}) o)`;
}

function recordOf(fields: Record<string, SQLWrapper>): SQL {
  return sql.join(
    Object.entries(fields).map(([key, value]) => sql`${value} as ${sql.identifier(key)}`),
    sql`, `,
  );
}

/** A timestamp as the API writes it, as Date#toISOString does: UTC, milliseconds, `Z`. */
export function isoDateTimeOf(column: SQLWrapper): SQL<string> {
  return sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * A list of the organisation's, read by one named statement over its row, as `list`'s JSON text;
 * '[]' when the organisation has gone. `values` are the list's own placeholders.
 */
export function organizationList<T, V extends object = object>(
  name: string,
  list: SQL<JsonText<T[]>>,
) {
  const statement = prepared((db) =>
    db
      .select({ list })
      .from(organizations)
      .where(eq(organizations.id, sql.placeholder("organizationId")))
      .prepare(name),
  );
  return async (db: Db, organizationId: string, values?: V): Promise<JsonText<T[]>> => {
    const [organization] = await statement(db).execute({ organizationId, ...values });
    return organization?.list ?? "[]";
  };
}
