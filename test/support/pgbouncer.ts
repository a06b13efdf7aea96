import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "./ports.js";

/** Debian's package (1.18 on bookworm); `.ci/run` installs it. */
const PGBOUNCER = "/usr/sbin/pgbouncer";

export type Pgbouncer = {
  /** `upstreamUrl` with its host and port replaced by the bouncer's. */
  url: string;
  /** What it wrote, for failure messages. */
  output(): string;
  stop(): Promise<void>;
};

/**
 * A real PgBouncer in transaction mode in front of `upstreamUrl`'s database, on a free port, with
 * its config in a temporary directory. It refuses to run as root, so as root it runs as nobody.
 */
export async function startPgbouncer(
  upstreamUrl: string,
  settings: { poolSize: number },
): Promise<Pgbouncer> {
  if (!existsSync(PGBOUNCER)) {
    throw new Error(`${PGBOUNCER} is missing: apt-get install -y pgbouncer (.ci/run does)`);
  }
  const upstream = new URL(upstreamUrl);
  const database = decodeURIComponent(upstream.pathname.slice(1));
  const user = decodeURIComponent(upstream.username);
  const port = await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), "pgbouncer-"));
  const config = path.join(dir, "pgbouncer.ini");
  await writeFile(path.join(dir, "userlist.txt"), `"${user}" ""\n`);
  await writeFile(
    config,
    [
      "[databases]",
      `${database} = host=${upstream.hostname} port=${upstream.port || 5432} dbname=${database}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${settings.poolSize}`,
      "max_client_conn = 200",
      // node-postgres sends the pool's timeouts at startup; PgBouncer refuses what it does not track.
      "ignore_startup_parameters = statement_timeout,idle_in_transaction_session_timeout",
      "",
    ].join("\n"),
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    await chmod(dir, 0o755);
    await Promise.all(
      ["pgbouncer.ini", "userlist.txt"].map((f) => chmod(path.join(dir, f), 0o644)),
    );
  }
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ["-u", "nobody"] : []), config], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const up = await Promise.race([
    new Promise<boolean>((resolve) => {
      const check = () => output.includes("process up") && resolve(true);
      child.stdout?.on("data", check);
      child.stderr?.on("data", check);
    }),
    exited.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000)),
  ]);
  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  if (!up) {
    await stop();
    throw new Error(`pgbouncer did not start:\n${output}`);
  }
  const url = new URL(upstreamUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return { url: url.toString(), output: () => output, stop };
}
