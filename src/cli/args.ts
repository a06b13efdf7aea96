import { type ParseArgsConfig, parseArgs } from "node:util";
import type { z } from "zod";
import { parseDuration } from "../config.js";
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A required option naming a record by id: `what` says which kind, for the refusal. */
export function requireIdOption(value: string | undefined, flag: string, what: string): string {
  const id = requireOption(value, flag);
  if (!UUID.test(id)) throw new UsageError(`--${flag} must be ${what} id (a UUID)`);
  return id;
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

/**
 * Options parsed by the schema the service parses its input with: a refusal names the flag each
 * field came from (`flags` maps field to flag), in the schema's own words.
 */
export function parseOptions<T extends z.ZodType>(
  schema: T,
  input: Record<string, unknown>,
  flags: Record<string, string>,
): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const reasons = result.error.issues.map((issue) => {
    const [field] = issue.path;
    const flag = typeof field === "string" ? flags[field] : undefined;
    return flag === undefined
      ? `${issue.path.join(".") || "input"}: ${issue.message}`
      : `--${flag} ${issue.message}`;
  });
  throw new UsageError(reasons.join("; "));
}
