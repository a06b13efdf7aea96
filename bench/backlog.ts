/**
 * `npm run bench -- backlog`: one receiver down for a day, BENCH_BACKLOG_ROWS (default
 * 1,000,000) failed deliveries, and the daily pass over them. With the API (`svc serve`, production)
 * and the worker (`svc worker`) as separate processes, it measures Redis memory against idle, the
 * worker's RSS, the API's write p99 with and without the backlog, then brings the receiver back and
 * reports the drain rate and whether each delivery came in event order.
 *
 * The worker runs with NODE_ENV unset, as in the pipeline bench: production refuses loopback
 * receivers. Its breaker's cooldown is capped at 30 s so the receiver's return is seen at once.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import {
  benchServiceEnv,
  createDatabase,
  freePort,
  PRODUCTION_NODE_FLAGS,
  type Started,
  seedDemoWorkspace,
  startProcess,
  stopProcess,
  svc,
  treeRss,
  waitForOk,
} from "./processes.js";
import { latencyOf, steadyWrites } from "./steady-writes.js";

const BACKLOG = Number(process.env.BENCH_BACKLOG_ROWS ?? 1_000_000);
const WRITE_RATE = 50;
const IDLE_SECONDS = 20;
const BACKLOG_SECONDS = Number(process.env.BENCH_BACKLOG_SECONDS ?? 90);
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 120);

export type BacklogResults = {
  backlog: number;
  queueWindow: number;
  idleRedisMiB: number;
  peakRedisMiB: number;
  peakQueueWaiting: number;
  peakWorkerRssMiB: number;
  /** Deliveries the pass had claimed (made due) when the receiver came back. */
  claimedByPass: number;
  idle: ReturnType<typeof latencyOf>;
  withBacklog: ReturnType<typeof latencyOf>;
  drain: {
    firstArrivalSeconds: number;
    deliveries: number;
    perSecond: number;
    /** Arrivals of an event older than one already arrived, and by how many events at most. */
    outOfOrder: number;
    maxDisplacement: number;
  };
};

/** The receiver: 503 while down; once up, 200 and the event's sequence number noted. */
function startReceiver(port: number) {
  const state = { down: true, arrivals: [] as { n: number; at: number }[] };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (state.down) return response.writeHead(503).end();
      const { target_id } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        target_id: string;
      };
      const n = target_id.startsWith("backlog-") ? Number(target_id.slice(8)) : -1;
      state.arrivals.push({ n, at: performance.now() });
      response.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise<{
    state: typeof state;
    close(): Promise<void>;
  }>((resolve) =>
    server.listen(port, "127.0.0.1", () =>
      resolve({
        state,
        close: () => {
          server.closeAllConnections();
          return new Promise((done) => server.close(() => done()));
        },
      }),
    ),
  );
}

const MiB = 1024 * 1024;

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

function orderOf(arrivals: { n: number }[]) {
  let highest = -1;
  let outOfOrder = 0;
  let maxDisplacement = 0;
  for (const { n } of arrivals) {
    if (n < 0) continue;
    if (n < highest) {
      outOfOrder++;
      maxDisplacement = Math.max(maxDisplacement, highest - n);
    }
    highest = Math.max(highest, n);
  }
  return { outOfOrder, maxDisplacement };
}

export async function measureBacklog(
  settings: { databaseUrl: string; redisUrl: string },
  log: (line: string) => void,
): Promise<BacklogResults> {
  const database = await createDatabase(settings.databaseUrl);
  const [apiPort, receiverPort] = await Promise.all([freePort(), freePort()]);
  const prefix = `bench-${randomBytes(4).toString("hex")}`;
  const queueWindow = Number(process.env.WEBHOOK_QUEUE_WINDOW ?? 10_000);
  const env = benchServiceEnv(settings, database.url, apiPort, {
    QUEUE_PREFIX: prefix,
    WEBHOOK_QUICK_RETRIES: "",
    WEBHOOK_QUEUE_WINDOW: String(queueWindow),
    WEBHOOK_BREAKER_MAX_COOLDOWN_SECONDS: "30",
    // The pass runs when the bench asks, not on the clock (1 January, 03:00).
    WEBHOOK_RETRY_CRON: "0 3 1 1 *",
  });
  const receiver = await startReceiver(receiverPort);
  const client = new pg.Client({ connectionString: database.url });
  const redis = new Redis(settings.redisUrl);
  const queue = new Queue("workspace", { connection: { url: settings.redisUrl }, prefix });
  const started: Started[] = [];
  try {
    const seeded = await seedDemoWorkspace(env);
    const webhook = JSON.parse(
      await svc(
        [
          "webhook",
          "create",
          "--org",
          seeded.organizationSlug,
          "--url",
          `http://127.0.0.1:${receiverPort}/hook`,
          "--events",
          "task.created",
          "--json",
        ],
        env,
      ),
    ) as { id: string };
    await client.connect();
    log(`backlog: seeding ${BACKLOG} failed deliveries to one webhook`);
    const seedStarted = performance.now();
    await client.query(`
      with events as (
        insert into change_events
          (organization_id, type, action, target_kind, target_id, occurred_at, diff, fanned_out_at)
        select w.organization_id, 'task.created', 'created', 'task', 'backlog-' || n,
          now() - interval '1 day' + n * interval '50 ms', '{"before":{},"after":{"title":"x"}}',
          now() - interval '1 day' + n * interval '50 ms'
        from webhooks w, generate_series(1, ${BACKLOG}) n
        where w.id = '${webhook.id}'
        returning id, occurred_at
      )
      insert into webhook_deliveries
        (webhook_id, change_event_id, status, attempts, passes, last_attempt_at, created_at)
      select '${webhook.id}', id, 'failed', 1, 0, occurred_at, occurred_at from events`);
    await client.query("vacuum analyze webhook_deliveries");
    await client.query("vacuum analyze change_events");
    log(`backlog: seeded in ${((performance.now() - seedStarted) / 1000).toFixed(0)} s`);

    const api = startProcess("node", [...PRODUCTION_NODE_FLAGS, "dist/svc.mjs", "serve"], {
      ...env,
      NODE_ENV: "production",
    });
    started.push(api);
    const worker = startProcess("node", [...PRODUCTION_NODE_FLAGS, "dist/svc.mjs", "worker"], {
      ...env,
      PORT: undefined,
    });
    started.push(worker);
    const url = `http://127.0.0.1:${apiPort}`;
    await waitForOk(`${url}/readyz`, api);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const workerPid = worker.child.pid ?? 0;

    const writes = steadyWrites({ url, token: seeded.token, project: "picker-arm" }, WRITE_RATE);
    // The first seconds warm the API up: not counted.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const idleFrom = performance.now();
    const idleRedis = await usedMemory(redis);
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));

    log("backlog: the daily pass, the receiver still down");
    const passFrom = performance.now();
    await queue.add("runRetryPass", {}, { removeOnComplete: true });
    let peakRedis = idleRedis;
    let peakWaiting = 0;
    let peakRss = treeRss(workerPid);
    const sample = async () => {
      peakRedis = Math.max(peakRedis, await usedMemory(redis));
      peakWaiting = Math.max(peakWaiting, (await queue.getJobCounts("waiting")).waiting ?? 0);
      peakRss = Math.max(peakRss, treeRss(workerPid));
    };
    const claimed = async () =>
      (
        await client.query<{ n: number }>(
          "select count(*)::int as n from webhook_deliveries where passes > 0",
        )
      ).rows[0]?.n ?? 0;
    for (let second = 1; second <= BACKLOG_SECONDS; second++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await sample();
      if (second % 15 === 0) {
        log(
          `backlog: ${second} s, ${await claimed()} claimed, Redis ${(peakRedis / MiB).toFixed(0)} MiB peak, ` +
            `${peakWaiting} jobs waiting at most, worker ${(peakRss / MiB).toFixed(0)} MiB peak`,
        );
      }
    }
    const passTo = performance.now();
    const all = await writes.stop();
    const claimedByPass = await claimed();

    log("backlog: the receiver is back");
    receiver.state.down = false;
    const upAt = performance.now();
    for (let second = 1; second <= DRAIN_SECONDS; second++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await sample();
      if (second % 15 === 0) {
        log(`backlog: ${second} s after recovery, ${receiver.state.arrivals.length} delivered`);
      }
    }
    const arrivals = receiver.state.arrivals;
    const first = arrivals[0]?.at ?? performance.now();
    const last = arrivals.at(-1)?.at ?? first;
    return {
      backlog: BACKLOG,
      queueWindow,
      idleRedisMiB: idleRedis / MiB,
      peakRedisMiB: peakRedis / MiB,
      peakQueueWaiting: peakWaiting,
      peakWorkerRssMiB: peakRss / MiB,
      claimedByPass,
      idle: latencyOf(all, idleFrom, passFrom),
      withBacklog: latencyOf(all, passFrom, passTo),
      drain: {
        firstArrivalSeconds: (first - upAt) / 1000,
        deliveries: arrivals.length,
        perSecond: arrivals.length / Math.max((last - first) / 1000, 0.001),
        ...orderOf(arrivals),
      },
    };
  } finally {
    for (const process of started.reverse()) await stopProcess(process);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    redis.disconnect();
    await client.end().catch(() => undefined);
    await receiver.close();
    await database.drop();
  }
}
