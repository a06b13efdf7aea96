import type { FastifyInstance } from "fastify";
import type { Config } from "../../config.js";
import { seedDemo } from "../../demo/seed.js";
import { openRuntime, type Runtime } from "../../runtime.js";
import { startApi } from "../../server.js";
import { startWorker } from "../../worker.js";
import { cliConfig, cliLogger } from "../context.js";
import { printLine } from "../output.js";

type Parts = { api: boolean; worker: boolean };

function printMintHint(config: Config): void {
  printLine(
    `Mint a token in the admin area (${config.publicUrl}/admin), or from the command line:`,
  );
  const stopFirst = config.embedded
    ? " (stop the service first: the embedded database is single-process)"
    : "";
  printLine(
    `  npm run --silent svc -- token create --org <slug> --user <email> --scopes all --json${stopFirst}`,
  );
}

/** On the first embedded start the demo workspace is seeded and its credentials shown once. */
async function greet(runtime: Runtime): Promise<void> {
  const { config } = runtime;
  const api = `${config.publicUrl}/api/v1`;
  printLine(`Workspace service listening on ${config.publicUrl}`);
  printLine(`API base: ${api}  (reference: ${api}/docs)`);
  const demo = config.embedded ? await seedDemo(runtime.database.db) : { seeded: false as const };
  if (!demo.seeded) {
    printMintHint(config);
    return;
  }
  printLine("");
  printLine(`Demo workspace "${demo.organizationSlug}" created. Shown once, keep them:`);
  printLine(
    `  Admin login:    ${demo.adminEmail} / ${demo.adminPassword}  (${config.publicUrl}/admin)`,
  );
  printLine(`  Demo token:     ${demo.token}  (every scope)`);
  printLine(`  Try:            curl -H "Authorization: Bearer ${demo.token}" ${api}/projects`);
}

async function run(parts: Parts): Promise<void> {
  const config = cliConfig();
  const logger = cliLogger(config);
  const runtime = await openRuntime(config, logger);
  let app: FastifyInstance | undefined;
  let stopWorker: (() => Promise<void>) | undefined;
  const shutdown = async (signal: string) => {
    logger.info({ signal }, "shutting down");
    await app?.close();
    await stopWorker?.();
    await runtime.close();
    process.exit(0);
  };
  process.once("SIGTERM", (signal) => void shutdown(signal));
  process.once("SIGINT", (signal) => void shutdown(signal));
  if (parts.worker) stopWorker = await startWorker(runtime);
  if (parts.api) {
    app = await startApi(runtime);
    await greet(runtime);
  }
}

export const startCommand = () => run({ api: true, worker: true });
export const serveCommand = () => run({ api: true, worker: false });
export const workerCommand = () => run({ api: false, worker: true });
