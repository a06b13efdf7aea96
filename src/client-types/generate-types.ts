import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { buildApp } from "../app.js";
import { loadConfig } from "../config.js";
import { openRuntime } from "../runtime.js";
import { renderClientTypes, TYPES_FILE, TYPES_PUBLIC_URL } from "./render-types.js";

/**
 * The document the app serves, from the app built in this process on a throwaway embedded
 * database: nothing to configure, and nothing listens.
 */
async function servedDocument(): Promise<unknown> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "client-types-"));
  const logger = pino({ level: "silent" });
  const config = loadConfig({
    PUBLIC_URL: TYPES_PUBLIC_URL,
    DATA_DIR: dataDir,
    // Serving the document reads no table.
    MIGRATE_ON_START: "false",
    LOG_LEVEL: "silent",
  });
  const runtime = await openRuntime(config, logger);
  try {
    const app = await buildApp({
      config,
      database: runtime.database,
      logger,
      queue: runtime.queue,
    });
    try {
      const response = await app.inject({ method: "GET", url: "/api/v1/openapi.json" });
      if (response.statusCode !== 200) {
        throw new Error(`GET /api/v1/openapi.json answered ${response.statusCode}`);
      }
      return response.json();
    } finally {
      await app.close();
    }
  } finally {
    await runtime.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const root = fileURLToPath(new URL("../..", import.meta.url));
const target = path.join(root, TYPES_FILE);
await writeFile(target, await renderClientTypes(await servedDocument()));
console.log(`wrote ${TYPES_FILE}`);
