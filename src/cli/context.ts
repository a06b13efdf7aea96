import { type Config, loadConfig } from "../config.js";
import type { Database, Db } from "../db/client.js";
import { createLogger } from "../logger.js";
import { findOrganizationBySlug } from "../modules/users/service.js";
import { openDatabase } from "../runtime.js";
import { CliError } from "./cli-error.js";

export function cliConfig(): Config {
  return loadConfig();
}

/** Opens the configured database, applies pending migrations as `npm start` does, then runs. */
export async function withDatabase<T>(
  action: (db: Db, config: Config, database: Database) => Promise<T>,
  options: { forceMigrate?: boolean } = {},
): Promise<T> {
  const config = cliConfig();
  const { database, release } = await openDatabase(config);
  try {
    if (config.migrateOnStart || options.forceMigrate) await database.migrate();
    return await action(database.db, config, database);
  } finally {
    await database.close();
    release();
  }
}

/** The id of the organisation a command names by slug; a refusal when there is none. */
export async function requireOrganizationId(db: Db, slug: string): Promise<string> {
  const organization = await findOrganizationBySlug(db, slug);
  if (organization === null) throw new CliError(`No organization with slug ${slug}`);
  return organization.id;
}

/** Readable lines in development at a terminal; JSON in production and whenever piped. */
export function cliLogger(config: Config) {
  return createLogger(config.logLevel, 1, {
    readable: !config.isProduction && process.stdout.isTTY === true,
  });
}
