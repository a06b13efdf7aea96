import { readFile } from "node:fs/promises";
import { buildEmbeddedTemplate } from "../../db/embedded.js";
import { seedDemo } from "../../demo/seed.js";
import { importWorkspace } from "../../import/service.js";
import { parseCommandArgs } from "../args.js";
import { CliError, UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

export async function migrateCommand(args: string[]): Promise<void> {
  parseCommandArgs(args, {});
  // withDatabase applies pending migrations whatever MIGRATE_ON_START says: that is the point here.
  await withDatabase(async () => {}, { forceMigrate: true });
  printLine("Migrations applied.");
}

/** `npm run build`'s last step: the initialised database a fresh embedded DATA_DIR starts from. */
export async function embeddedTemplateCommand(args: string[]): Promise<void> {
  parseCommandArgs(args, {});
  printLine(`Embedded database template ready in ${await buildEmbeddedTemplate()}.`);
}

export async function demoCommand(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { json: { type: "boolean" } });
  const result = await withDatabase((db) => seedDemo(db));
  if (values.json) return printJson(result);
  if (!result.seeded) return printLine("The demo workspace already exists; nothing was written.");
  printLine(`Demo workspace "${result.organizationSlug}" created.`);
  printLine(`Admin login: ${result.adminEmail} / ${result.adminPassword}`);
  printLine(`Demo token (every scope): ${result.token}`);
}

async function readJsonFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new CliError(`Cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

export async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(args, { json: { type: "boolean" } }, 1);
  const file = positionals[0];
  if (file === undefined) throw new UsageError("import needs a FILE");
  const document = await readJsonFile(file);
  const imported = await withDatabase((db) => importWorkspace(db, document));
  if (values.json) return printJson(imported);
  printLine(`Imported organization ${imported.organization.slug} (${imported.organization.id}).`);
}
