import type { FastifyInstance } from "fastify";
import type { Config } from "../../config.js";
import type { MetricsListener } from "../../http/metrics-listener.js";
import { type MetricsRecorder, NO_METRICS } from "../../metrics/recorder.js";
import { openRuntime, type Runtime } from "../../runtime.js";
import { cliConfig, cliLogger } from "../context.js";
import { printLine } from "../output.js";

type Parts = { api: boolean; worker: boolean };

function stopFirstNote(config: Config): string {
  return config.embedded
    ? " (stop the service first: the embedded database is single-process)"
    : "";
}

function printMintHint(config: Config): void {
  printLine(
    `Mint a token in the admin area (${config.publicUrl}/admin), or from the command line:`,
  );
  printLine(
    `  npm run --silent svc -- token create --org <slug> --user <email> --scopes all --json${stopFirstNote(config)}`,
  );
}

/** A fresh database has nobody who could sign in to mint a token: the first step is an org. */
function printCreateOrganizationHint(config: Config): void {
  printLine("No organization yet. Create the first one and its admin from the command line:");
  printLine(
    `  npm run --silent svc -- org create --slug <slug> --name <name> --admin-email <email>${stopFirstNote(config)}`,
  );
}

/** On the first embedded start the demo workspace is seeded and its credentials shown once. */
async function greet(runtime: Runtime): Promise<void> {
  const { config } = runtime;
  const api = `${config.publicUrl}/api/v1`;
  printLine(`Workspace service listening on ${config.publicUrl}`);
  printLine(`API base: ${api}  (reference: ${api}/docs)`);
  const demo = config.embedded
    ? await (await import("../../demo/seed.js")).seedDemo(runtime.database.db)
    : { seeded: false as const };
  if (!demo.seeded) {
    const { hasNoOrganization } = await import("../../modules/organizations/service.js");
    // Only a hint: a database that is down at start leaves the service serving and not ready.
    const empty = await hasNoOrganization(runtime.database.db).catch((error: unknown) => {
      runtime.logger.warn({ err: error }, "could not read the organisations for the start-up hint");
      return undefined;
    });
    if (empty === true) printCreateOrganizationHint(config);
    else if (empty === false) printMintHint(config);
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

type Running = {
  app?: FastifyInstance;
  stopWorker?: () => Promise<void>;
  metrics?: MetricsListener;
  /** From the first SIGTERM or SIGINT on. */
  draining?: boolean;
};

/**
 * With METRICS_PORT: the process's metrics and their listener, which answers /healthz from now
 * on and /readyz once the process serves. Its modules (prom-client among them) load only then.
 */
async function listenForMetrics(
  runtime: Runtime,
  parts: Parts,
): Promise<{ recorder: MetricsRecorder; listener?: MetricsListener }> {
  const settings = runtime.config.metrics;
  if (settings === undefined) return { recorder: NO_METRICS };
  const [{ createMetrics }, { startMetricsListener }, { readinessCheck }, { RequestPathRedis }] =
    await Promise.all([
      import("../../metrics/metrics.js"),
      import("../../http/metrics-listener.js"),
      import("../../http/health.js"),
      import("../../http/request-path-redis.js"),
    ]);
  const { readPipelineState } = await import("../../webhooks/pipeline-state.js");
  const metrics = await createMetrics({
    settings,
    database: runtime.database,
    redis: runtime.redis,
    queue: runtime.queue,
    serves: parts,
    readPipelineState: parts.worker ? () => readPipelineState(runtime.database.db) : undefined,
  });
  const redis = runtime.redis === undefined ? undefined : new RequestPathRedis(runtime.redis);
  try {
    const listener = await startMetricsListener({
      metrics,
      readiness: readinessCheck(runtime.database, redis, runtime.config.readinessTimeoutMs),
      host: settings.host,
      port: settings.port,
      logger: runtime.logger,
    });
    return { recorder: metrics.recorder, listener };
  } catch (error) {
    metrics.close();
    throw error;
  }
}

/**
 * The first SIGTERM or SIGINT stops accepting connections, lets in-flight requests and delivery
 * attempts finish, closes the pools and exits 0; past SHUTDOWN_TIMEOUT_MS, or on a second
 * signal, the process exits 1 at once.
 */
function exitGracefullyOnSignals(runtime: Runtime, running: Running): void {
  const { logger } = runtime;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting without waiting");
      process.exit(1);
    }
    stopping = true;
    running.draining = true;
    running.metrics?.markDraining();
    const { shutdownDrainDelayMs } = runtime.config;
    if (running.app !== undefined && shutdownDrainDelayMs > 0) {
      // Still serving while /readyz says "draining", so the load balancer stops sending before
      // the listener closes: a connection it sends to a closed listener is reset, not refused.
      logger.info({ signal, delayMs: shutdownDrainDelayMs }, "draining: readiness now fails");
      await new Promise((resolve) => setTimeout(resolve, shutdownDrainDelayMs));
    }
    logger.info({ signal }, "shutting down: finishing in-flight requests and deliveries");
    setTimeout(() => {
      logger.error({ timeoutMs: runtime.config.shutdownTimeoutMs }, "shutdown timed out");
      process.exit(1);
    }, runtime.config.shutdownTimeoutMs).unref();
    try {
      await Promise.all([running.app?.close(), running.stopWorker?.()]);
      await running.metrics?.close();
      await runtime.close();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, "shutdown failed");
      process.exit(1);
    }
  };
  process.on("SIGTERM", (signal) => void shutdown(signal));
  process.on("SIGINT", (signal) => void shutdown(signal));
}

async function run(parts: Parts): Promise<void> {
  const config = cliConfig();
  const logger = cliLogger(config);
  // The API's and the worker's modules load while the database opens: PGlite reads and compiles
  // its WebAssembly off the main thread, which would otherwise wait for it.
  const [runtime, { startApi }, { startWorker }] = await Promise.all([
    openRuntime(config, logger),
    import("../../server.js"),
    import("../../worker.js"),
  ]);
  const running: Running = {};
  exitGracefullyOnSignals(runtime, running);
  const { recorder, listener } = await listenForMetrics(runtime, parts);
  running.metrics = listener;
  if (parts.worker) running.stopWorker = await startWorker({ ...runtime, metrics: recorder });
  if (parts.api) {
    running.app = await startApi(runtime, recorder, () => running.draining === true);
    await greet(runtime);
  }
  listener?.markServing();
}

export const startCommand = () => run({ api: true, worker: true });
export const serveCommand = () => run({ api: true, worker: false });
export const workerCommand = () => run({ api: false, worker: true });
