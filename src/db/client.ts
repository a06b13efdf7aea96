import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type { ChannelListener, Unlisten } from "./notifications.js";

/** A database handle or an open transaction: data-access functions accept either. */
export type Db = PgDatabase<PgQueryResultHKT>;

/** Rows of a raw `db.execute`: node-postgres and PGlite both answer with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

/** A connection pool's connections: open, idle, and the queries waiting for one. */
type PoolCounts = { total: number; idle: number; waiting: number };

export type Database = {
  db: Db;
  kind: "postgres" | "pglite";
  /**
   * Hears NOTIFY on `channel`, sent by any process that shares the database, including the
   * triggers of the migrations (in embedded mode, this one process).
   */
  listen(channel: string, listener: ChannelListener): Promise<Unlisten>;
  /** Applies pending migrations; concurrent callers on Postgres wait on an advisory lock. */
  migrate(): Promise<void>;
  /**
   * Runs `action` while holding the advisory lock `key` (on a connection of its own, so the
   * action's statements stay short transactions on the pool); null, without running it, when
   * another holder has the lock.
   */
  whileLocked<T>(key: number, action: () => Promise<T>): Promise<T | null>;
  ping(): Promise<void>;
  /** The pool's counts; undefined for PGlite, a single connection in the process. */
  poolCounts(): PoolCounts | undefined;
  close(): Promise<void>;
};

export function findMigrationsFolder(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "migrations");
    if (existsSync(path.join(candidate, "meta", "_journal.json"))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("migrations folder not found beside the package");
    dir = parent;
  }
}
