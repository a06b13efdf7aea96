import type pg from "pg";

type Query = (...args: unknown[]) => unknown;

/** A query given as a plain config object (drizzle's `{ name, text, types }`), not a Submittable. */
function isNamedConfig(value: unknown): value is { name: unknown } {
  return (
    value !== null &&
    typeof value === "object" &&
    "name" in value &&
    typeof (value as { submit?: unknown }).submit !== "function"
  );
}

/**
 * The pool's statements all go unnamed. node-postgres parses a named statement once per
 * connection and then sends only its name, which a transaction-mode pooler (PgBouncer before
 * 1.21) may route to a server connection that never parsed it, or already did.
 */
export function sendStatementsUnnamed(pool: pg.Pool): void {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as Query;
    const unnamed: Query = (first, ...rest) =>
      isNamedConfig(first) ? query({ ...first, name: undefined }, ...rest) : query(first, ...rest);
    client.query = unnamed as pg.PoolClient["query"];
  });
}
