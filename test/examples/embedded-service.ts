import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, svcCommand } from "../support/cli.js";
import { freePort } from "../support/ports.js";
import { WatchedProcess } from "./watched-process.js";

export type EmbeddedService = {
  url: string;
  adminEmail: string;
  adminPassword: string;
  /** The demo token, every scope. */
  token: string;
  process: WatchedProcess;
  stop(): Promise<void>;
};

/**
 * `svc start` on a fresh DATA_DIR, as a user's first `npm start` (the CLI bundled from the
 * current sources, as test/embedded.test.ts runs it, so it is the code under test): PGlite, the
 * in-process queue, the demo workspace, and the admin login and demo token read from what it
 * prints.
 */
export async function startEmbeddedService(): Promise<EmbeddedService> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "svc-example-"));
  const port = await freePort();
  const service = WatchedProcess.start(
    "the embedded service",
    process.execPath,
    [...svcCommand(), "start"],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        DATA_DIR: dataDir,
        PORT: String(port),
        LOG_LEVEL: "warn",
      },
    },
  );
  const stop = async () => {
    await service.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const login = await service.waitFor(/Admin login:\s+(\S+) \/ (\S+)/, { timeoutMs: 45_000 });
    const token = await service.waitFor(/Demo token:\s+(svc_live_\S+)\s/);
    return {
      url: `http://127.0.0.1:${port}`,
      adminEmail: login[1] as string,
      adminPassword: login[2] as string,
      token: token[1] as string,
      process: service,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
