import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { TEST_SECRET_KEY } from "../support/app.js";
import { ROOT, svcCommand } from "../support/cli.js";
import { freePort } from "../support/ports.js";

const dataDirs: string[] = [];
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * The console of `svc start` (embedded, a fresh DATA_DIR) up to its greeting, read through a
 * pipe or, with `terminal`, through a pseudo-terminal made by script(1).
 */
async function consoleOfStart(env: Record<string, string>, terminal: boolean): Promise<string> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "svc-console-"));
  dataDirs.push(dataDir);
  const command = [process.execPath, ...svcCommand(), "start"];
  const [file, args] = terminal
    ? ["script", ["-qec", command.map((part) => `'${part}'`).join(" "), "/dev/null"]]
    : [command[0] as string, command.slice(1)];
  const child = spawn(file, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      if (output.includes("Demo token:")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`start exited with ${code}:\n${output}`)));
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
  return output;
}

const logLines = (output: string) =>
  output.split(/\r?\n/).filter((line) => /listening at|worker started/.test(line));

it("prints readable log lines in development at a terminal", async () => {
  const lines = logLines(await consoleOfStart({}, true));
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) {
    expect(line).toMatch(/INFO/);
    expect(line.trimStart().startsWith("{")).toBe(false);
  }
});

it("keeps JSON lines when the output is piped, and in production at a terminal", async () => {
  for (const [env, terminal] of [
    [{}, false],
    [{ NODE_ENV: "production", SECRET_KEY: TEST_SECRET_KEY }, true],
  ] as const) {
    const lines = logLines(await consoleOfStart(env, terminal));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: 30 });
  }
});
