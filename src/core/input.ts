import type { z } from "zod";
import { InvalidRequest } from "./errors.js";

/** Parses a service's input with its schema; a refusal names each field at fault. */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new InvalidRequest(result.error.issues.map(describeIssue).join("; "));
}

/** One refusal of a schema, naming the field it concerns. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  return `${issue.path.join(".") || "input"}: ${issue.message}`;
}
