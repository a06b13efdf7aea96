import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export type Started = { child: ChildProcess; output: () => string; outputDir: string };

/**
 * A command started as a user would start it, in its own process group. Its output goes to a
 * file, as a terminal or a log collector would take it, so that reading it costs the bench
 * nothing while it measures (and never holds the service back).
 */
export function startProcess(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd = ROOT,
): Started {
  const outputDir = mkdtempSync(path.join(tmpdir(), "bench-output-"));
  const log = path.join(outputDir, "output.log");
  const fd = openSync(log, "w");
  const child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  return { child, outputDir, output: () => readFileSync(log, "utf8") };
}

/** Resolves once `url` answers 200; fails when the process exits first or after `timeoutMs`. */
export async function waitForOk(url: string, started: Started, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (started.child.exitCode !== null) {
      throw new Error(`process exited (${started.child.exitCode}):\n${started.output()}`);
    }
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} not ready:\n${started.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Stops the whole process group (npm, and the node it started), waits for the leader, and
 * removes the captured output.
 */
export async function stopProcess(started: Started): Promise<void> {
  const { child } = started;
  if (child.exitCode === null && child.pid !== undefined) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-child.pid, "SIGTERM");
    const timer = setTimeout(() => child.pid && process.kill(-child.pid, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(started.outputDir, { recursive: true, force: true });
}

function childrenOf(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name may hold spaces; the parent pid is the second field after it.
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // The process ended while we looked.
    }
  }
  return children;
}

function rssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = /VmRSS:\s+(\d+)/.exec(status)?.[1];
    return kib === undefined ? 0 : Number(kib) * 1024;
  } catch {
    return 0;
  }
}

/** The resident memory of a process and all its descendants, in bytes. */
export function treeRss(pid: number): number {
  const children = childrenOf();
  let total = 0;
  const stack = [pid];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    total += rssBytes(next);
    stack.push(...(children.get(next) ?? []));
  }
  return total;
}

/** Samples a process tree's memory every 100 ms until stopped; returns the peak in MiB. */
export function samplePeakRss(pid: number): () => number {
  let peak = treeRss(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRss(pid));
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, treeRss(pid)) / 1024 / 1024;
  };
}

/** Runs the built `svc` CLI of `root`, as `npm run svc` does, and returns its stdout. */
export async function svc(args: string[], env: NodeJS.ProcessEnv, root = ROOT): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [path.join(root, "dist/svc.mjs"), ...args],
    { cwd: root, env, maxBuffer: 64 * 1024 * 1024 },
  );
  return stdout;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** A database of the bench's own on the shared server, dropped when the bench is done. */
export async function createDatabase(
  adminUrl: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_${randomBytes(5).toString("hex")}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/** Node's flags for the service's processes, as `npm start` and docs/production.md run them. */
export const PRODUCTION_NODE_FLAGS = ["--heap-growing-percent=40"];

/**
 * A bench service's environment on its own database and queue prefix, with the rate limit
 * checked as in production but set too high to refuse.
 */
export function benchServiceEnv(
  settings: { redisUrl: string },
  databaseUrl: string,
  port: number,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    SECRET_KEY: randomBytes(32).toString("base64"),
    DATABASE_URL: databaseUrl,
    REDIS_URL: settings.redisUrl,
    QUEUE_PREFIX: `bench-${randomBytes(4).toString("hex")}`,
    PORT: String(port),
    RATE_LIMIT_MAX: "1000000000",
    ...extra,
  };
}

/** Migrates the bench database and seeds the demo workspace: its all-scope token and slug. */
export async function seedDemoWorkspace(
  env: NodeJS.ProcessEnv,
): Promise<{ token: string; organizationSlug: string }> {
  await svc(["migrate"], env);
  return JSON.parse(await svc(["demo", "--json"], env));
}
