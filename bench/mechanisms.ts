/**
 * `npm run bench -- mechanisms`: each speed mechanism on and off in one run. An "off" build is
 * this commit with bench/mechanisms/<name>.patch applied, in a temporary git worktree. On and off
 * run in interleaved rounds, and a mechanism pays when its worst round beats the other build's
 * best by at least 5 %. The mechanisms measured and removed are in bench/RESULTS.md.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { measureBurstOfBuilds } from "./pipeline.js";
import { median, ROOT } from "./processes.js";

const run = promisify(execFile);
const PATCHES = path.join(ROOT, "bench/mechanisms");
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

/** A worktree of HEAD with one patch applied, built for the bench. */
async function offBuild(parent: string, name: string): Promise<Build> {
  const root = path.join(parent, name);
  await run("git", ["worktree", "add", "--detach", root, "HEAD"], { cwd: ROOT });
  symlinkSync(path.join(ROOT, "node_modules"), path.join(root, "node_modules"));
  await run("git", ["apply", path.join(PATCHES, `${name}.patch`)], { cwd: root });
  await run(
    process.execPath,
    [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    { cwd: root },
  );
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

/** Grouped writers on and off: the only mechanism left with an "off" patch. */
export async function measureMechanisms(
  settings: { databaseUrl: string; redisUrl: string },
  log: (line: string) => void,
): Promise<Comparison[]> {
  const parent = mkdtempSync(path.join(tmpdir(), "bench-mechanisms-builds-"));
  try {
    log("mechanisms: building grouped-writers off");
    const grouped = await offBuild(parent, "grouped-writers");
    log("mechanisms: pipeline burst, on and off in interleaved rounds");
    const on: Build = { name: "on", root: ROOT };
    const bursts = await measureBurstOfBuilds(settings, [on, grouped], BURST_ROUNDS, log);
    return [
      {
        mechanism: "grouped writers (group commit in the delivery path)",
        measure: "burst deliveries/s",
        better: "higher",
        on: bursts.get("on") ?? [],
        off: bursts.get(grouped.name) ?? [],
      },
    ];
  } finally {
    await removeBuilds(parent);
  }
}
