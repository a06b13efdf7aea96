/** What a failed statement says about its cause, read from Postgres, PGlite and node-postgres. */

type DriverError = { code?: unknown; column?: unknown; message?: unknown; cause?: unknown };

function* causes(error: unknown): Generator<DriverError> {
  for (let current = error; current !== null && typeof current === "object"; ) {
    const candidate = current as DriverError;
    yield candidate;
    current = candidate.cause;
  }
}

/** Postgres (or PGlite) SQLSTATE of an error, looking through Drizzle's wrapper. */
function sqlStateOf(error: unknown): DriverError | null {
  for (const candidate of causes(error)) {
    if (typeof candidate.code === "string" && /^[0-9A-Z]{5}$/.test(candidate.code))
      return candidate;
  }
  return null;
}

/**
 * A value Postgres cannot store (class 22, "data exception": NUL bytes, out-of-range dates or
 * numbers): the column it names, or "" when it names none; null for any other error.
 */
export function malformedValueColumn(error: unknown): string | null {
  const state = sqlStateOf(error);
  if (state === null || !String(state.code).startsWith("22")) return null;
  return typeof state.column === "string" ? state.column : "";
}

/**
 * SQLSTATEs that mean the database cannot serve now, not that the statement was wrong:
 * connection exceptions (08), too many connections, a statement or idle transaction past its
 * timeout, and a server shutting down, crashing or still starting.
 */
const UNAVAILABLE_STATES = new Set(["53300", "57014", "25P03", "57P01", "57P02", "57P03"]);

/** node-postgres's own words for a connection it lost or could not get in time. */
const UNAVAILABLE_MESSAGES = [
  "timeout exceeded when trying to connect",
  "Connection terminated",
  "is not queryable",
];

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** True when the error comes from a database that is unreachable, overloaded or too slow. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const candidate of causes(error)) {
    const code = typeof candidate.code === "string" ? candidate.code : "";
    if (code.startsWith("08") || UNAVAILABLE_STATES.has(code) || NETWORK_CODES.has(code))
      return true;
    const message = typeof candidate.message === "string" ? candidate.message : "";
    if (UNAVAILABLE_MESSAGES.some((words) => message.includes(words))) return true;
    // A connection tried on several addresses gathers every attempt's failure in one error.
    if (candidate instanceof AggregateError && candidate.errors.some(isDatabaseUnavailable))
      return true;
  }
  return false;
}
