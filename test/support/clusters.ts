import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { chown, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./ports.js";

// Servers of a test's own, which it may stop, kill and start again: never the shared ones the
// rest of the suite uses (docs/testing.md, "Tests that cause the fault").

/** The newest PostgreSQL server binaries Debian installed (`/usr/lib/postgresql/<version>/bin`). */
const PG_BIN = (() => {
  const root = "/usr/lib/postgresql";
  const [newest] = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  if (newest === undefined) throw new Error(`no PostgreSQL server binaries under ${root}`);
  return path.join(root, newest, "bin");
})();
const SERVICE_DATABASE = "workspace";

/** Everything a test file started, so a crashed file still takes its servers down with it. */
const cleanups = new Set<() => void>();
process.once("exit", () => {
  for (const cleanup of cleanups) cleanup();
});

/** PostgreSQL refuses to run as root; as root the suite runs its binaries as `postgres`. */
function asPostgres(binary: string, args: string[]): [string, string[]] {
  const command = path.join(PG_BIN, binary);
  return process.getuid?.() === 0
    ? ["runuser", ["-u", "postgres", "--", command, ...args]]
    : [command, args];
}

async function pgTool(binary: string, args: string[]): Promise<void> {
  const [command, commandArgs] = asPostgres(binary, args);
  await promisify(execFile)(command, commandArgs, { timeout: 60_000 });
}

export type PostgresCluster = {
  /** The service's database on this cluster. */
  url: string;
  port: number;
  /** `immediate` is a crash as clients see it: connections drop, nothing is flushed politely. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it at once if it runs and removes its files; safe to call more than once. */
  destroy(): Promise<void>;
};

/**
 * A PostgreSQL cluster of the calling test file's own: initdb into a temporary directory, a
 * free port, unix sockets in that directory, and a database `workspace` for the service.
 */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), "svc-pg-"));
  const dataDir = path.join(dir, "data");
  const port = await freePort();
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    await chown(dir, uid, gid);
  }
  let running = false;
  const stopNow = () => {
    if (!running) return;
    const [command, args] = asPostgres("pg_ctl", ["stop", "-D", dataDir, "-m", "immediate"]);
    try {
      execFileSync(command, args, { stdio: "ignore", timeout: 30_000 });
    } catch {
      // Already down.
    }
    running = false;
  };
  const removeNow = () => {
    stopNow();
    rmSync(dir, { recursive: true, force: true });
  };
  cleanups.add(removeNow);

  const start = async () => {
    // fsync is off: the tests crash the server, not the machine, so the OS keeps what it wrote.
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await pgTool("pg_ctl", [
      "start",
      "-D",
      dataDir,
      "-w",
      "-t",
      "60",
      "-l",
      path.join(dir, "server.log"),
      "-o",
      options,
    ]);
    running = true;
  };
  const cluster: PostgresCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/${SERVICE_DATABASE}`,
    port,
    async stop(mode = "fast") {
      await pgTool("pg_ctl", ["stop", "-D", dataDir, "-w", "-m", mode]);
      running = false;
    },
    start,
    async destroy() {
      stopNow();
      cleanups.delete(removeNow);
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    await pgTool("initdb", [
      "-D",
      dataDir,
      "-U",
      "postgres",
      "--auth=trust",
      "--no-sync",
      "-E",
      "UTF8",
      "--no-instructions",
    ]);
    await start();
    const client = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
    });
    await client.connect();
    try {
      await client.query(`create database ${SERVICE_DATABASE}`);
    } finally {
      await client.end();
    }
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
  return cluster;
}

export type RedisServer = {
  url: string;
  port: number;
  /** SIGKILL: connections drop, and without persistence everything it held is gone. */
  kill(): Promise<void>;
  /** Kills it if it runs, then starts it again, empty, on the same port. */
  restartEmpty(): Promise<void>;
  /** SIGSTOP: connections stay open and commands are accepted, but nothing is answered. */
  pause(): void;
  /** SIGCONT after `pause`: it answers again, everything it was sent meanwhile first. */
  resume(): void;
};

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

async function spawnRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  await new Promise<void>((resolve, reject) => {
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Ready to accept connections")) {
        // Nobody reads it from here on; keep the pipe drained.
        child.stdout?.resume();
        resolve();
      }
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
  });
  return child;
}

/** A redis-server of the calling test file's own, without persistence, on `port` or a free one. */
export async function startRedisServer(port?: number): Promise<RedisServer> {
  const chosen = port ?? (await freePort());
  let child = await spawnRedis(chosen);
  // SIGKILL ends a stopped process too, so cleanup need not resume it first.
  const killNow = () => {
    if (isRunning(child)) child.kill("SIGKILL");
  };
  cleanups.add(killNow);
  const kill = async () => {
    if (!isRunning(child)) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${chosen}`,
    port: chosen,
    kill,
    async restartEmpty() {
      await kill();
      child = await spawnRedis(chosen);
    },
    pause() {
      child.kill("SIGSTOP");
    },
    resume() {
      if (isRunning(child)) child.kill("SIGCONT");
    },
  };
}
