import { z } from "zod";
import { checkMarkdownNesting } from "../richtext/nesting.js";

/**
 * The values the API reference fills in for "try it": they must pass validation as sent (an
 * empty string for an id or a date does not). The slug is the demo workspace's first project.
 */
export const EXAMPLE_ID = "0b6f1c1e-8d2a-4c7e-9f3a-2d5b7e9c1a40";
const EXAMPLE_SLUG = "picker-arm";

/**
 * Ids in paths and bodies: any 8-4-4-4-12 hex string, as Postgres accepts (z.uuid() refuses some
 * it stores), lower-cased so answers and change events carry the spelling the database stores.
 */
export const id = z
  .guid()
  .toLowerCase()
  .meta({ examples: [EXAMPLE_ID] });

/**
 * The shape slugs are made with. A path slug of any other shape is looked up like any unknown
 * slug (the same 404 body), so it is not refused at validation.
 */
export const SLUG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A slug a client or an operator makes: an organisation's, a project's, a spec's. */
export const writableSlug = z
  .string()
  .max(200)
  .regex(
    SLUG_PATTERN,
    "must be letters, digits, '.', '_' and '-', starting with a letter or digit",
  );

export const projectSlugParams = z.object({ slug: z.string().meta({ examples: [EXAMPLE_SLUG] }) });

/** `YYYY-MM-DD` (spec: `date`); a refusal names the format, which zod's own message does not. */
export const isoDate = z.iso
  .date({ error: "expected a date as YYYY-MM-DD" })
  .meta({ examples: ["2026-03-01"] });

// Postgres stores neither NUL nor an unpaired UTF-16 surrogate (refused in text and jsonb), and
// has no year 0000: such input is the caller's mistake, so it is a 400 naming the field rather
// than a database error.
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const UNSTORABLE_TEXT = "must not contain NUL characters or unpaired surrogates";

export function isStorableText(value: string): boolean {
  return !value.includes("\u0000") && !UNPAIRED_SURROGATE.test(value);
}

/** Free text a client writes: any string the database can store. */
export const storableText = z.string().refine(isStorableText, UNSTORABLE_TEXT);

/**
 * Markdown a client writes: storable, and shallow enough to convert in bounded time. The API
 * checks the nesting where it converts, off the event loop (src/modules/rich-text/bodies.ts).
 */
export const markdownText = storableText.superRefine(checkMarkdownNesting);

/** A date a client writes. */
export const writableDate = isoDate.refine(
  (value) => !value.startsWith("0000"),
  "year 0000 is not a date",
);

/** What a date-time must look like, said by every refusal of one (spec: `date-time`). */
export const DATE_TIME_FORMAT =
  "expected a date-time as ISO 8601 with seconds and Z or an offset, e.g. 2026-03-12T09:00:00Z";

/** ISO 8601 date-time with seconds and `Z` or an offset; the API prints UTC with `Z`. */
export const isoDateTime = z.iso.datetime({ offset: true, error: DATE_TIME_FORMAT }).meta({
  examples: ["2026-03-01T09:00:00Z"],
});

/** A date-time a client writes. */
export const writableDateTime = isoDateTime.refine(
  (value) => !value.startsWith("0000"),
  "year 0000 is not a date",
);

export function toIsoDateTime(value: Date): string;
export function toIsoDateTime(value: Date | null): string | null;
export function toIsoDateTime(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}
