import { z } from "zod";
import { DATE_TIME_FORMAT, isoDate, isoDateTime } from "../../core/values.js";

/**
 * The meeting lists' inclusive `from`/`to`. A plain date is accepted beside ISO date-times for
 * "meetings in March" (a whole UTC day); a date-time without an offset is ambiguous, so refused
 * (docs/spec-choices.md).
 */
export type StartsAtRange = {
  from: Instant | null;
  to: (Instant & { inclusive: boolean }) | null;
};

/**
 * A bound as the caller wrote it (`text`, compared by Postgres at its microsecond precision, so
 * `…00.0001Z` excludes a meeting at `…00.000Z`) and as a `Date` for checks in JavaScript.
 */
type Instant = { text: string; at: Date };

const BOUND_FORMAT = `${DATE_TIME_FORMAT}, or a date as YYYY-MM-DD`;

const bound = z.union([isoDateTime, isoDate], { error: BOUND_FORMAT });

function isDateOnly(value: string): boolean {
  return isoDate.safeParse(value).success;
}

function instant(text: string): Instant {
  return { text, at: new Date(text) };
}

function lowerBound(value: string): Instant {
  return instant(isDateOnly(value) ? `${value}T00:00:00Z` : value);
}

function upperBound(value: string): Instant & { inclusive: boolean } {
  if (!isDateOnly(value)) return { ...instant(value), inclusive: true };
  // The whole day: everything before the next midnight (UTC), whatever the stored precision.
  const nextDay = new Date(`${value}T00:00:00Z`);
  nextDay.setUTCDate(nextDay.getUTCDate() + 1);
  return { ...instant(nextDay.toISOString()), inclusive: false };
}

/** Years Postgres and `Date#toISOString` agree on; an offset can push a 4-digit year out. */
function inStorableYears(date: Date): boolean {
  const year = date.getUTCFullYear();
  return year >= 1 && year <= 9999;
}

/** Call only with a query that passed `startsAtRangeQuery`. */
export function startsAtRange(query: { from?: string | undefined; to?: string | undefined }) {
  const range: StartsAtRange = {
    from: query.from === undefined ? null : lowerBound(query.from),
    to: query.to === undefined ? null : upperBound(query.to),
  };
  return range;
}

function isEmptyWindow({ from, to }: StartsAtRange): boolean {
  if (from === null || to === null) return false;
  return to.inclusive ? from.at > to.at : from.at >= to.at;
}

export const startsAtRangeQuery = z
  .object({
    from: bound
      .optional()
      .describe(
        "Only meetings starting at or after this instant (inclusive). A date means 00:00 UTC that day.",
      ),
    to: bound
      .optional()
      .describe(
        "Only meetings starting at or before this instant (inclusive). A date means the whole UTC day.",
      ),
  })
  .superRefine((query, context) => {
    const range = startsAtRange(query);
    if (range.from !== null && !inStorableYears(range.from.at)) {
      context.addIssue({
        code: "custom",
        path: ["from"],
        message: "must be in years 0001 to 9999",
      });
    }
    if (range.to !== null && !inStorableYears(range.to.at)) {
      context.addIssue({ code: "custom", path: ["to"], message: "must be in years 0001 to 9999" });
    }
    if (isEmptyWindow(range)) {
      context.addIssue({ code: "custom", path: ["to"], message: "must not be before from" });
    }
  });
