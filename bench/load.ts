/**
 * One load round, run in a process of its own so the load generator never shares a core's
 * event loop with what it measures. Reads the round as JSON from argv[2], prints the result as
 * one JSON line.
 */
import autocannon from "autocannon";

export type Round = {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
};

export type RoundResult = {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Answers other than 2xx, and connection errors or timeouts: a round with any is void. */
  failures: number;
};

const round = JSON.parse(process.argv[2] ?? "{}") as Round;
const result = await autocannon({
  url: round.url,
  method: round.method,
  headers: round.headers,
  body: round.body,
  connections: round.connections,
  duration: round.seconds,
});
const printed: RoundResult = {
  requestsPerSecond: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  failures: result.non2xx + result.errors + result.timeouts,
};
process.stdout.write(`${JSON.stringify(printed)}\n`);
