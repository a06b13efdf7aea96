import { freePort } from "./processes.js";

/** With BENCH_METRICS=1 the service runs with its metrics listener on, scraped as in production. */
const METRICS_ON = process.env.BENCH_METRICS === "1";

// Prometheus's usual interval.
const SCRAPE_INTERVAL_MS = 15_000;

/** The service's environment with METRICS_PORT when the bench measures with metrics on. */
export async function withMetricsListener(
  env: NodeJS.ProcessEnv,
): Promise<{ env: NodeJS.ProcessEnv; metricsUrl?: string }> {
  if (!METRICS_ON) return { env };
  const port = await freePort();
  return {
    env: { ...env, METRICS_PORT: String(port) },
    metricsUrl: `http://127.0.0.1:${port}/metrics`,
  };
}

/** Scrapes `metricsUrl` every 15 s until the returned function is called; nothing without it. */
export function scrapeEvery15Seconds(metricsUrl: string | undefined): () => void {
  if (metricsUrl === undefined) return () => {};
  const scrape = () => {
    fetch(metricsUrl)
      .then((answer) => answer.text())
      .catch(() => {});
  };
  const timer = setInterval(scrape, SCRAPE_INTERVAL_MS);
  return () => clearInterval(timer);
}
