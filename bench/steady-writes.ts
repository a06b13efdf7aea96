/**
 * Steady task creates through the API, as a client at a fixed rate would send them (each one on
 * its own schedule, whether or not the last has answered), with each answer's latency noted.
 */
export type Api = { url: string; token: string; project: string };

export type Write = { startedAt: number; ms: number; ok: boolean };

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

/** Writes at `rate`/s until stopped; `stop` resolves with every write once all have answered. */
export function steadyWrites(api: Api, rate: number): { stop(): Promise<Write[]> } {
  const writes: Promise<Write>[] = [];
  let sent = 0;
  const began = performance.now();
  const timer = setInterval(() => {
    // Catch up on ticks the timer missed, so the rate holds under load.
    const due = Math.floor(((performance.now() - began) / 1000) * rate);
    for (; sent < due; sent++) writes.push(createTask(api, `steady ${sent}`));
  }, 5);
  return {
    async stop() {
      clearInterval(timer);
      return Promise.all(writes);
    },
  };
}

async function createTask(api: Api, title: string): Promise<Write> {
  const startedAt = performance.now();
  const response = await fetch(`${api.url}/api/v1/projects/${api.project}/tasks`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    body: JSON.stringify({ title }),
  }).catch(() => null);
  await response?.arrayBuffer();
  return { startedAt, ms: performance.now() - startedAt, ok: response?.ok === true };
}

/** p50 and p99 (ms) of the writes started within [from, to), and how many failed. */
export function latencyOf(writes: Write[], from: number, to: number) {
  const within = writes.filter((write) => write.startedAt >= from && write.startedAt < to);
  const ms = within.map((write) => write.ms);
  return {
    count: within.length,
    failed: within.filter((write) => !write.ok).length,
    p50: percentile(ms, 0.5),
    p99: percentile(ms, 0.99),
  };
}
