/**
 * `npm run bench -- mechanisms`: each speed mechanism on and off in one run. An "off" build is
 * this commit with bench/mechanisms/<name>.patch applied, in a temporary git worktree; the bundle
 * is off by starting the tsc output instead. On and off run in interleaved rounds, and a
 * mechanism pays when its worst round beats the other build's best by at least 5 %. The ones
 * measured and removed are in bench/RESULTS.md.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { measureBurstOfBuilds, rotated } from "./pipeline.js";
import {
  freePort,
  median,
  ROOT,
  startProcess,
  stopProcess,
  treeRss,
  waitForOk,
} from "./processes.js";

const run = promisify(execFile);
const PATCHES = path.join(ROOT, "bench/mechanisms");
const START_ROUNDS = 5;
const BURST_ROUNDS = 3;
const MARGIN = 0.05;

type Build = { name: string; root: string };
type Direction = "higher" | "lower";
export type Comparison = {
  mechanism: string;
  measure: string;
  better: Direction;
  on: number[];
  off: number[];
};

/** A worktree of HEAD with one patch applied, built (tsc and the bundle) for the bench. */
async function offBuild(parent: string, name: string): Promise<Build> {
  const root = path.join(parent, name);
  await run("git", ["worktree", "add", "--detach", root, "HEAD"], { cwd: ROOT });
  symlinkSync(path.join(ROOT, "node_modules"), path.join(root, "node_modules"));
  await run("git", ["apply", path.join(PATCHES, `${name}.patch`)], { cwd: root });
  await run(
    process.execPath,
    [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
    },
  );
  await run(process.execPath, ["--import", "tsx", "scripts/bundle.ts"], { cwd: root });
  // The migrations are the same, so is the template a fresh embedded DATA_DIR starts from.
  cpSync(path.join(ROOT, "dist/embedded-template"), path.join(root, "dist/embedded-template"), {
    recursive: true,
  });
  return { name, root };
}

async function removeBuilds(parent: string): Promise<void> {
  for (const name of readdirSync(parent)) {
    await run("git", ["worktree", "remove", "--force", path.join(parent, name)], {
      cwd: ROOT,
    }).catch(() => undefined);
  }
  rmSync(parent, { recursive: true, force: true });
}

type Entry = { name: string; root: string; file: string };
type StartRound = { restartMs: number; rssMiB: number; cliMs: number };

/**
 * The embedded default's restart (spawn to the first /healthz 200, on a seeded DATA_DIR), the
 * process's RSS once ready, and a CLI command that loads its module and refuses its arguments.
 */
async function compareStarts(entries: Entry[], log: (line: string) => void) {
  const port = await freePort();
  const env = (dataDir: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    PORT: String(port),
  });
  const start = (entry: Entry, dataDir: string) =>
    startProcess(
      process.execPath,
      ["--heap-growing-percent=40", entry.file, "start"],
      env(dataDir),
      entry.root,
    );
  const dataDirs = new Map<string, string>();
  try {
    for (const entry of entries) {
      const dataDir = mkdtempSync(path.join(tmpdir(), "bench-mechanisms-"));
      dataDirs.set(entry.name, dataDir);
      const first = start(entry, dataDir);
      await waitForOk(`http://127.0.0.1:${port}/healthz`, first).catch((error: Error) => {
        throw new Error(`${entry.name}: ${error.message}`);
      });
      await stopProcess(first);
    }
    const measured = new Map(entries.map((entry) => [entry.name, [] as StartRound[]]));
    for (let i = 0; i < START_ROUNDS; i++) {
      for (const entry of rotated(entries, i)) {
        const began = performance.now();
        const service = start(entry, dataDirs.get(entry.name) ?? "");
        await waitForOk(`http://127.0.0.1:${port}/healthz`, service);
        const restartMs = performance.now() - began;
        await new Promise((resolve) => setTimeout(resolve, 500));
        const rssMiB = treeRss(service.child.pid ?? 0) / 2 ** 20;
        await stopProcess(service);
        const cliBegan = performance.now();
        await run(process.execPath, [entry.file, "token"], { cwd: entry.root }).catch(
          (error: { code?: number }) => {
            if (error.code !== 2) throw error;
          },
        );
        const cliMs = performance.now() - cliBegan;
        measured.get(entry.name)?.push({ restartMs, rssMiB, cliMs });
      }
      log(`mechanisms: start round ${i + 1} of ${START_ROUNDS}`);
    }
    return measured;
  } finally {
    for (const dataDir of dataDirs.values()) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Whether `on` beats `off` by the margin in every round against every round. */
function pays(comparison: Comparison): boolean {
  const { on, off, better } = comparison;
  return better === "higher"
    ? Math.min(...on) >= Math.max(...off) * (1 + MARGIN)
    : Math.max(...on) <= Math.min(...off) * (1 - MARGIN);
}

const spread = (values: number[], digits: number) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;

export function comparisonTable(comparisons: Comparison[]): string[] {
  const rows = comparisons.map((c) => {
    const digits = c.measure.includes("p99") ? 1 : 0;
    const change = (median(c.on) / median(c.off) - 1) * 100;
    return `| ${c.mechanism} | ${c.measure} | ${spread(c.on, digits)} | ${spread(c.off, digits)} | ${change >= 0 ? "+" : ""}${change.toFixed(1)} % | ${pays(c) ? "yes" : "no"} |`;
  });
  return [
    "| mechanism | measure | on: median (min–max) | off: median (min–max) | on vs off | pays (≥ 5 % beyond the spread) |",
    "| --- | --- | --- | --- | --- | --- |",
    ...rows,
  ];
}

const START_MECHANISMS: Record<string, string> = {
  "lazy-imports": "lazy imports",
  bundle: "bundled start file (dist/svc.mjs)",
};

export async function measureMechanisms(
  settings: { databaseUrl: string; redisUrl: string },
  log: (line: string) => void,
): Promise<Comparison[]> {
  const parent = mkdtempSync(path.join(tmpdir(), "bench-mechanisms-builds-"));
  const available = new Set(readdirSync(PATCHES).map((file) => file.replace(/\.patch$/, "")));
  const present = (names: string[]) => names.filter((name) => available.has(name));
  try {
    const names = [...available];
    log(`mechanisms: building ${names.join(", ")} off`);
    const builds = new Map<string, Build>();
    // Two builds at a time: the machine has two cores.
    for (let i = 0; i < names.length; i += 2) {
      for (const build of await Promise.all(
        names.slice(i, i + 2).map((n) => offBuild(parent, n)),
      )) {
        builds.set(build.name, build);
      }
    }
    const on: Build = { name: "on", root: ROOT };
    const comparisons: Comparison[] = [];

    // A part that fails is reported and the others still run: the figures so far are kept.
    const part = async (name: string, measure: () => Promise<void>) => {
      const before = comparisons.length;
      try {
        await measure();
      } catch (error) {
        log(
          `mechanisms: ${name} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      for (const row of comparisonTable(comparisons.slice(before))) log(row);
    };

    log("mechanisms: starts, every build in interleaved rounds");
    const entries: Entry[] = [
      { name: "on", root: ROOT, file: "dist/svc.mjs" },
      { name: "bundle", root: ROOT, file: "dist/src/cli/index.js" },
      ...present(["lazy-imports"]).flatMap((name) => {
        const build = builds.get(name);
        return build === undefined ? [] : [{ name, root: build.root, file: "dist/svc.mjs" }];
      }),
    ];
    await part("starts", async () => {
      const starts = await compareStarts(entries, log);
      const onStarts = starts.get("on") ?? [];
      for (const entry of entries.slice(1)) {
        const offStarts = starts.get(entry.name) ?? [];
        const mechanism = START_MECHANISMS[entry.name] ?? entry.name;
        const of = (rounds: StartRound[], key: keyof StartRound) => rounds.map((r) => r[key]);
        comparisons.push(
          {
            mechanism,
            measure: "embedded restart ms",
            better: "lower",
            on: of(onStarts, "restartMs"),
            off: of(offStarts, "restartMs"),
          },
          {
            mechanism,
            measure: "RSS once ready MiB",
            better: "lower",
            on: of(onStarts, "rssMiB"),
            off: of(offStarts, "rssMiB"),
          },
          {
            mechanism,
            measure: "CLI command (`svc token`) ms",
            better: "lower",
            on: of(onStarts, "cliMs"),
            off: of(offStarts, "cliMs"),
          },
        );
      }
    });

    const grouped = builds.get("grouped-writers");
    await part("burst", async () => {
      if (grouped === undefined) return;
      log("mechanisms: pipeline burst, on and off in interleaved rounds");
      const bursts = await measureBurstOfBuilds(settings, [on, grouped], BURST_ROUNDS, log);
      comparisons.push({
        mechanism: "grouped writers (group commit in the delivery path)",
        measure: "burst deliveries/s",
        better: "higher",
        on: bursts.get("on") ?? [],
        off: bursts.get("grouped-writers") ?? [],
      });
    });
    return comparisons;
  } finally {
    await removeBuilds(parent);
  }
}
