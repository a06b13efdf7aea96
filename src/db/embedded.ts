import { cpSync, existsSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { setFlagsFromString } from "node:v8";
import { sql } from "drizzle-orm";
import { type Database, findMigrationsFolder } from "./client.js";

/**
 * Where `npm run build` leaves an initialised, migrated embedded database: a fresh DATA_DIR
 * starts as a copy of it instead of running PGlite's initdb (seconds, and most of a gigabyte
 * of memory) on the user's first start.
 */
function embeddedTemplateDir(): string {
  return path.join(path.dirname(findMigrationsFolder()), "dist", "embedded-template");
}

// PGlite writes these as the whole postgresql.conf at every start. One process's database of one
// workspace needs only a small buffer cache, and PGlite's memory (WebAssembly, which never
// shrinks) is most of the embedded process's footprint; the rest is what initdb sets.
const EMBEDDED_SETTINGS = [
  "shared_buffers = 16MB",
  "timezone = UTC",
  "log_timezone = UTC",
  "datestyle = 'iso, mdy'",
  "lc_messages = C",
  "default_text_search_config = 'pg_catalog.english'",
];

/**
 * PGlite's WebAssembly keeps V8's baseline code: the optimising pass cost start time and memory
 * for no faster queries (docs/architecture.md, "Embedded database"). Set at run time,
 * `--liftoff-only` alone holds on Node 20 but not on Node 24, whose V8 tiers up unless the flags
 * it implies on the command line are set as well.
 */
export const BASELINE_WASM_ONLY = "--liftoff-only --no-wasm-tier-up --no-wasm-dynamic-tiering";

/** A fresh database directory starts from the template, when there is one. */
function startFromTemplate(dir: string, template: string): void {
  if (existsSync(dir) || !existsSync(path.join(template, "PG_VERSION"))) return;
  cpSync(template, dir, { recursive: true });
}

/**
 * Embedded mode: one PGlite database in `dir` (or in memory when `dir` is undefined). PGlite is
 * loaded only here, so a process on PostgreSQL never holds it.
 */
export async function openPglite(
  dir: string | undefined,
  /** What a fresh `dir` starts from; null runs initdb. */
  options: { template?: string | null } = {},
): Promise<Database> {
  setFlagsFromString(BASELINE_WASM_ONLY);
  const [{ PGlite }, { drizzle }, { migrate }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("drizzle-orm/pglite"),
    import("drizzle-orm/pglite/migrator"),
  ]);
  const template = options.template === undefined ? embeddedTemplateDir() : options.template;
  if (dir !== undefined && template !== null) startFromTemplate(dir, template);
  const client = new PGlite(dir, { postgresqlconf: EMBEDDED_SETTINGS });
  await client.waitReady;
  const db = drizzle(client, { casing: "snake_case" });
  // One connection, whose session locks every caller in the process would share: the keys held
  // are kept here instead.
  const heldKeys = new Set<number>();
  return {
    db,
    kind: "pglite",
    // One process owns the embedded database, so it always hears its own notifications.
    async listen(channel, channelListener) {
      const unlisten = await client.listen(channel, (payload) =>
        channelListener.onNotification(payload),
      );
      channelListener.onListening();
      return () => unlisten();
    },
    // PGlite is a single connection in this process, so there is nobody to lock out.
    migrate: () => migrate(db, { migrationsFolder: findMigrationsFolder() }),
    async whileLocked(key, action) {
      if (heldKeys.has(key)) return null;
      heldKeys.add(key);
      try {
        return await action();
      } finally {
        heldKeys.delete(key);
      }
    },
    async ping() {
      await db.execute(sql`select 1`);
    },
    poolCounts: () => undefined,
    close: () => client.close(),
  };
}

/** Builds the template anew: initdb and every migration, then moved into place at once. */
export async function buildEmbeddedTemplate(target = embeddedTemplateDir()): Promise<string> {
  const building = `${target}.building`;
  rmSync(building, { recursive: true, force: true });
  const database = await openPglite(building, { template: null });
  try {
    await database.migrate();
  } finally {
    await database.close();
  }
  rmSync(target, { recursive: true, force: true });
  renameSync(building, target);
  return target;
}
