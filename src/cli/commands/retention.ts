import { runRetention } from "../../webhooks/retention.js";
import { parseAgeOption, parseCommandArgs } from "../args.js";
import { CliError, UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

/**
 * `svc retention run`: the worker's retention now, with DELIVERY_LOG_RETENTION_DAYS or
 * `--older-than` as the limit; `--older-than 0s` removes every settled row.
 */
async function run(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    "older-than": { type: "string" },
    json: { type: "boolean" },
  });
  const olderThan = values["older-than"];
  const olderThanSeconds =
    olderThan === undefined ? undefined : parseAgeOption(olderThan, "older-than");
  const removed = await withDatabase((_db, config, database) =>
    runRetention(database, {
      ...config.retention,
      olderThanSeconds: olderThanSeconds ?? config.retention.olderThanSeconds,
    }),
  );
  if (removed === null) throw new CliError("Retention is already running elsewhere; try later");
  if (values.json) {
    printJson({
      deliveries: removed.deliveries,
      attempts: removed.attempts,
      events: removed.events,
    });
    return;
  }
  printLine(`Removed ${removed.deliveries} deliveries`);
  printLine(`Removed ${removed.attempts} attempts`);
  printLine(`Removed ${removed.events} change events`);
}

export async function retentionCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "run") return run(rest);
  throw new UsageError("retention needs run");
}
