import { z } from "zod";
import {
  type AuditCursor,
  type AuditRecord,
  auditActionSchema,
  listAuditEntries,
} from "../../modules/audit/service.js";
import { parseCommandArgs, parseOptions, requireOption } from "../args.js";
import { UsageError } from "../cli-error.js";
import { requireOrganizationId, withDatabase } from "../context.js";
import { jsonArrayPrinter, printLine } from "../output.js";

// Read a page at a time, so a long log is never held in memory.
const PAGE_SIZE = 500;

const listOptions = z.object({
  since: z.iso
    .datetime({ offset: true, error: "must be an ISO 8601 time, e.g. 2026-03-01T00:00:00Z" })
    .transform((text) => new Date(text))
    .optional(),
  action: auditActionSchema.optional(),
});

function asJson(entry: AuditRecord) {
  return { ...entry, createdAt: entry.createdAt.toISOString() };
}

function asLine(entry: AuditRecord): string {
  const target = `${entry.target.type} ${entry.target.label ?? entry.target.id ?? ""}`.trim();
  const source = entry.sourceAddress ?? "-";
  return `${entry.createdAt.toISOString()}  ${entry.actor.label}  ${entry.action}  ${target}  ${entry.outcome}  ${source}`;
}

/** `svc audit list`: the organisation's audit log, newest first, as the Activity page shows it. */
async function list(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    org: { type: "string" },
    since: { type: "string" },
    action: { type: "string" },
    json: { type: "boolean" },
  });
  const orgSlug = requireOption(values.org, "org");
  const options = parseOptions(
    listOptions,
    { since: values.since, action: values.action },
    { since: "since", action: "action" },
  );
  const json = values.json ? jsonArrayPrinter() : undefined;
  await withDatabase(async (db) => {
    const organizationId = await requireOrganizationId(db, orgSlug);
    let before: AuditCursor | null = null;
    do {
      const page = await listAuditEntries(db, {
        organizationId,
        action: options.action ?? null,
        since: options.since ?? null,
        before,
        limit: PAGE_SIZE,
      });
      for (const entry of page.entries) {
        if (json === undefined) printLine(asLine(entry));
        else json.item(asJson(entry));
      }
      before = page.older;
    } while (before !== null);
  });
  json?.end();
}

export async function auditCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "list") return list(rest);
  throw new UsageError("audit needs list");
}
