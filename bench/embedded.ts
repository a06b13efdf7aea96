/**
 * The embedded default as a new user meets it: `npm start` on a fresh DATA_DIR to its first
 * `/healthz` 200 (cold start), again on the same DATA_DIR (restart), and the peak memory of the
 * whole process tree (npm and node) from start through a load round.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Round, RoundResult } from "./load.js";
import { scrapeEvery15Seconds, withMetricsListener } from "./metrics-scrape.js";
import {
  freePort,
  median,
  ROOT,
  samplePeakRss,
  startProcess,
  stopProcess,
  waitForOk,
} from "./processes.js";

export type EmbeddedResults = { coldStartMs: number; restartMs: number; peakRssMiB: number };

const STARTS = 3;

async function timedStart(dataDir: string, port: number) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    PORT: String(port),
    RATE_LIMIT_MAX: "1000000000",
  };
  const observed = await withMetricsListener(env);
  const started = performance.now();
  const service = startProcess("npm", ["start"], observed.env);
  const stopSampling = samplePeakRss(service.child.pid ?? 0);
  await waitForOk(`http://127.0.0.1:${port}/healthz`, service);
  const ms = performance.now() - started;
  const stopScraping = scrapeEvery15Seconds(observed.metricsUrl);
  return {
    service,
    ms,
    stopSampling: () => {
      stopScraping();
      return stopSampling();
    },
  };
}

export async function measureEmbedded(log: (line: string) => void): Promise<EmbeddedResults> {
  const port = await freePort();
  const cold: number[] = [];
  const restarts: number[] = [];
  let peakRssMiB = 0;
  for (let i = 0; i < STARTS; i++) {
    const dataDir = mkdtempSync(path.join(tmpdir(), "bench-embedded-"));
    try {
      const first = await timedStart(dataDir, port);
      cold.push(first.ms);
      // The demo token is printed once the demo is seeded, right after the first 200.
      const token = await waitForToken(first.service.output);
      await stopProcess(first.service);
      first.stopSampling();
      const again = await timedStart(dataDir, port);
      restarts.push(again.ms);
      const round: Round = {
        url: `http://127.0.0.1:${port}/api/v1/projects`,
        method: "GET",
        headers: { authorization: `Bearer ${token}` },
        connections: 50,
        seconds: 5,
      };
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", path.join(ROOT, "bench/load.ts"), JSON.stringify(round)],
        { cwd: ROOT },
      );
      const loaded = JSON.parse(stdout) as RoundResult;
      if (loaded.failures > 0) throw new Error(`embedded load: ${loaded.failures} failed requests`);
      peakRssMiB = Math.max(peakRssMiB, again.stopSampling());
      await stopProcess(again.service);
      log(
        `embedded: cold start ${Math.round(cold.at(-1) ?? 0)} ms, restart ${Math.round(restarts.at(-1) ?? 0)} ms`,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  return { coldStartMs: median(cold), restartMs: median(restarts), peakRssMiB };
}

async function waitForToken(output: () => string): Promise<string> {
  for (let waited = 0; waited < 30_000; waited += 20) {
    const token = /Demo token:\s+(svc_live_\S+)/.exec(output())?.[1];
    if (token !== undefined) return token;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no demo token printed:\n${output()}`);
}
