import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, inject } from "vitest";
import { TEST_SECRET_KEY } from "./app.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

declare module "vitest" {
  export interface ProvidedContext {
    /** The CLI bundled from the current sources by global-setup.ts. */
    cliBundle: string;
  }
}

/** How node runs `svc` in the tests: the bundle of the current sources (see cli-bundle.ts). */
export function svcCommand(): string[] {
  return [inject("cliBundle")];
}

export type CliResult = { code: number | null; stdout: string; stderr: string };

/** The real `svc` entry point in a child process, as a user runs it. */
export function runCli(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...svcCommand(), ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SECRET_KEY: TEST_SECRET_KEY,
        LOG_LEVEL: "warn",
        ...env,
      },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

/** Runs `svc`, expects it to succeed without a word on stderr, and returns what it printed. */
export async function runCliOk(args: string[], env: Record<string, string>): Promise<string> {
  const res = await runCli(args, env);
  expect(res.stderr).toBe("");
  expect(res.code).toBe(0);
  return res.stdout;
}

/** `runCliOk` for a command run with `--json`: what it printed, parsed. */
export async function runCliJson(args: string[], env: Record<string, string>) {
  return JSON.parse(await runCliOk(args, env));
}
