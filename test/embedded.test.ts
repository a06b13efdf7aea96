import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, runCli, svcCommand } from "./support/cli.js";

/** Boots the embedded default (PGlite + in-process queue) the way `npm start` does. */
let dataDir: string;
let port: number;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function embeddedEnv(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: "warn",
  };
}

type Started = { child: ChildProcessWithoutNullStreams; stdout: () => string };

function start(): Promise<Started> {
  const child = spawn(process.execPath, [...svcCommand(), "start"], {
    cwd: ROOT,
    env: embeddedEnv(),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      // The greeting is several writes; wait for its last line to be complete.
      if (/(token create|Try:)[^\n]*\n/.test(stdout)) {
        clearInterval(timer);
        resolve({ child, stdout: () => stdout });
      }
    }, 50);
    child.on("exit", (code) => {
      clearInterval(timer);
      reject(new Error(`service exited with ${code}: ${stderr}`));
    });
  });
}

function stop({ child }: Started): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners("exit");
    child.on("exit", (code) => resolve(code));
    child.kill("SIGTERM");
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-embedded-"));
  port = await freePort();
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe("embedded mode", () => {
  it("seeds the demo on first start, prints a working token, and stops cleanly", async () => {
    const first = await start();
    try {
      const out = first.stdout();
      const token = /Demo token:\s+(svc_live_\S+)/.exec(out)?.[1];
      expect(token).toBeDefined();
      expect(out).toMatch(/Admin login:\s+admin@demo\.example \/ \S+/);
      expect(out).toContain(
        `curl -H "Authorization: Bearer ${token}" http://127.0.0.1:${port}/api/v1/projects`,
      );

      const base = `http://127.0.0.1:${port}`;
      const me = await fetch(`${base}/api/v1/me`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(me.status).toBe(200);
      expect(((await me.json()) as any).data.scopes).toHaveLength(13);
      const projects = await fetch(`${base}/api/v1/projects`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const slugs = ((await projects.json()) as any).data.map((p: { slug: string }) => p.slug);
      expect(slugs.length).toBeGreaterThanOrEqual(2);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);

      const busy = await runCli(
        ["token", "create", "--org", "demo", "--user", "admin@demo.example", "--scopes", "all"],
        {
          DATA_DIR: dataDir,
        },
      );
      expect(busy.code).toBe(1);
      expect(busy.stderr).toMatch(/in use by process/);
    } finally {
      expect(await stop(first)).toBe(0);
    }
  });

  it("does not seed again on a later start, and says how to mint a token", async () => {
    const second = await start();
    try {
      expect(second.stdout()).not.toContain("Demo token");
      expect(second.stdout()).toContain("token create");
    } finally {
      await stop(second);
    }
    const minted = await runCli(
      [
        "token",
        "create",
        "--org",
        "demo",
        "--user",
        "admin@demo.example",
        "--scopes",
        "projects:read",
        "--json",
      ],
      { DATA_DIR: dataDir },
    );
    expect(minted.code).toBe(0);
    expect(JSON.parse(minted.stdout).token).toMatch(/^svc_live_/);
  });
});
