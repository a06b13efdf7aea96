import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import path from "node:path";

export class EmbeddedDatabaseBusy extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function tryCreate(file: string): boolean {
  try {
    const fd = openSync(file, "wx", 0o600);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/**
 * PGlite is one process's database: a second process opening the same directory would
 * corrupt it, so the directory is claimed with a pid file and a second opener is refused.
 */
export function claimEmbeddedDatabase(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, "pglite.pid");
  for (let attempt = 0; attempt < 2; attempt += 1) {
    if (tryCreate(file)) return () => rmSync(file, { force: true });
    const holder = Number.parseInt(readFileSync(file, "utf8"), 10);
    if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) {
      throw new EmbeddedDatabaseBusy(
        `The embedded database in ${dataDir} is in use by process ${holder} (the running service). ` +
          "Stop it first, or set DATABASE_URL to use PostgreSQL, which many processes can share.",
      );
    }
    // The holder died without cleaning up: the claim is stale.
    rmSync(file, { force: true });
  }
  throw new EmbeddedDatabaseBusy(`Could not claim the embedded database in ${dataDir}`);
}
