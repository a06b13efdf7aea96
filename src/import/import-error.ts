import type { z } from "zod";
import { InvalidRequest } from "../core/errors.js";

export type ImportIssue = { path: readonly PropertyKey[]; message: string };

// Enough to fix a file in a few passes without burying the first causes.
const MAX_REPORTED_ISSUES = 20;

/** `projects[0].specs[1].versions[0].status`, the way a reader finds it in the file. */
export function formatJsonPath(path: readonly PropertyKey[]): string {
  const formatted = path.reduce<string>((text, key) => {
    if (typeof key === "number") return `${text}[${key}]`;
    return text === "" ? String(key) : `${text}.${String(key)}`;
  }, "");
  return formatted === "" ? "document" : formatted;
}

function describeIssues(issues: readonly ImportIssue[]): string {
  const described = issues
    .slice(0, MAX_REPORTED_ISSUES)
    .map((issue) => `${formatJsonPath(issue.path)}: ${issue.message}`);
  const omitted = issues.length - described.length;
  if (omitted > 0) described.push(`and ${omitted} more`);
  return described.join("; ");
}

/** A workspace document that cannot be imported; the message names each JSON path at fault. */
export class ImportError extends InvalidRequest {
  constructor(readonly issues: readonly ImportIssue[]) {
    super(describeIssues(issues));
    this.name = "ImportError";
  }
}

/** One issue per unknown key, so each is named by its own path. */
export function issuesFromZod(issues: readonly z.core.$ZodIssue[]): ImportIssue[] {
  return issues.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => ({ path: [...issue.path, key], message: "unknown field" }))
      : [{ path: issue.path, message: issue.message }],
  );
}
