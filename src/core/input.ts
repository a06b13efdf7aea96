import type { z } from "zod";
import { InvalidRequest } from "./errors.js";

/** Parses a service's input with its schema; a refusal names each field at fault. */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const reasons = result.error.issues.map(
    (issue) => `${issue.path.join(".") || "input"}: ${issue.message}`,
  );
  throw new InvalidRequest(reasons.join("; "));
}
