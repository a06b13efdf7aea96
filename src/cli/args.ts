import { type ParseArgsConfig, parseArgs } from "node:util";
import type { z } from "zod";
import { parseDuration, parseSeconds } from "../config.js";
import { describeIssue } from "../core/input.js";
import { id } from "../core/values.js";
import { UsageError } from "./cli-error.js";

type Options = NonNullable<ParseArgsConfig["options"]>;
type Parsed<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>
>;

/** Strict option parsing: unknown flags and stray arguments are usage errors. */
export function parseCommandArgs<O extends Options>(
  args: string[],
  options: O,
  positionals = 0,
): Parsed<O> {
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.positionals.length > positionals) {
    throw new UsageError(`Unexpected argument: ${parsed.positionals[positionals]}`);
  }
  return parsed;
}

export function requireOption(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new UsageError(`--${flag} is required`);
  return value;
}

/** A required option naming a record by id, in the API's id shape: `what` says which kind. */
export function requireIdOption(value: string | undefined, flag: string, what: string): string {
  const parsed = id.safeParse(requireOption(value, flag));
  if (!parsed.success) throw new UsageError(`--${flag} must be ${what} id (a UUID)`);
  return parsed.data;
}

/** `3600`, `90s`, `15m`, `12h` or `30d` → seconds. */
export function parseDurationOption(input: string, flag: string): number {
  const seconds = parseDuration(input);
  // Ten years: a later expiry is almost certainly a typo, and far dates overflow.
  if (seconds === null || seconds > 10 * 365 * 86400) {
    throw new UsageError(
      `--${flag} must be a positive number of seconds, or a number with s, m, h or d (at most 10 years)`,
    );
  }
  return seconds;
}

/** An age: `0s` (now), `3600`, `90s`, `15m`, `12h` or `30d` → seconds. */
export function parseAgeOption(input: string, flag: string): number {
  const seconds = parseSeconds(input);
  if (seconds === null) {
    throw new UsageError(`--${flag} must be a number of seconds, or a number with s, m, h or d`);
  }
  return seconds;
}

/** A schema's refusal in the CLI's words: each field named by the flag it came from. */
function refusalOf(
  error: z.ZodError,
  flagOf: (field: PropertyKey | undefined) => string | undefined,
) {
  const reasons = error.issues.map((issue) => {
    const flag = flagOf(issue.path[0]);
    return flag === undefined ? describeIssue(issue) : `--${flag} ${issue.message}`;
  });
  return new UsageError(reasons.join("; "));
}

/**
 * Options parsed by the schema the service parses its input with: `flags` maps each field to
 * the flag it came from, so a refusal names the flag, in the schema's own words.
 */
export function parseOptions<T extends z.ZodType>(
  schema: T,
  input: Record<string, unknown>,
  flags: Record<string, string>,
): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw refusalOf(result.error, (field) => (typeof field === "string" ? flags[field] : undefined));
}

/** One option parsed by the schema the service uses for that value. */
export function parseOption<T extends z.ZodType>(
  schema: T,
  value: string | undefined,
  flag: string,
): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw refusalOf(result.error, () => flag);
}
