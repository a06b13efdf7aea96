/**
 * `npm run bench -- retention`: the delivery log's retention on a large log while the API takes
 * writes. Seeds BENCH_RETENTION_ROWS (default 1,000,000) settled deliveries older than the limit
 * (10 webhooks, one attempt each, their change events), and 10,000 rows that must stay (held,
 * due, failed with passes left, events not yet fanned out, recently settled); starts the API in
 * production mode, writes 50 tasks/s, and runs `svc retention run` as an operator (or the
 * worker's schedule, which calls the same function) would. Reports the purge time, the writes'
 * p99 before and during it, and checks that every row that must stay is still there.
 */
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
  waitForOk,
} from "./processes.js";
import { latencyOf, steadyWrites } from "./steady-writes.js";

const SETTLED = Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000);
const WEBHOOKS = 10;
const MUST_STAY_EACH = 2000;
const WRITE_RATE = 50;
const BEFORE_SECONDS = 20;

export type RetentionResults = {
  settled: number;
  seedSeconds: number;
  purgeSeconds: number;
  removed: { deliveries: number; attempts: number; events: number };
  before: ReturnType<typeof latencyOf>;
  during: ReturnType<typeof latencyOf>;
  /** Rows that had to stay, by kind: how many were seeded and how many are still there. */
  mustStay: { kind: string; seeded: number; left: number }[];
  /** Settled rows older than the limit still there after the run (should be 0). */
  expiredLeft: number;
};

/**
 * The log as a month of traffic leaves it, set-based so a million rows take seconds: events
 * 40 days old fanned out to 10 webhooks, each delivery settled with one attempt (every tenth
 * event's exhausted), and the rows retention must keep, noted in `bench_must_stay`.
 */
function seedStatements(organizationId: string): string[] {
  const events = Math.ceil(SETTLED / WEBHOOKS);
  const old = "now() - interval '40 days'";
  const event = (marker: string, count: number, age: string, fanned: boolean) => `
    insert into change_events
      (organization_id, type, action, target_kind, target_id, occurred_at, diff, fanned_out_at)
    select '${organizationId}', 'task.created', 'created', 'task', '${marker}-' || n,
      ${age} + n * interval '1 ms', '{"before":{},"after":{"title":"aged"}}',
      ${fanned ? `${age} + n * interval '1 ms'` : "null"}
    from generate_series(1, ${count}) n`;
  return [
    `insert into webhooks (organization_id, url, secret_ciphertext, enabled)
     select '${organizationId}', 'https://receiver.example/hook/' || n, 'unused', n <= ${WEBHOOKS}
     from generate_series(1, ${WEBHOOKS + 1}) n`,
    event("aged", events, old, true),
    `insert into webhook_deliveries
       (webhook_id, change_event_id, status, attempts, passes, last_attempt_at, delivered_at, created_at)
     select w.id, e.id, case when e.id % 10 = 0 then 'exhausted' else 'delivered' end::delivery_status,
       1, case when e.id % 10 = 0 then 7 else 0 end, e.occurred_at + interval '1 s',
       case when e.id % 10 = 0 then null else e.occurred_at + interval '1 s' end, e.occurred_at
     from change_events e, (select id from webhooks where enabled limit ${WEBHOOKS}) w
     where e.target_id like 'aged-%'`,
    `insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code)
     select id, last_attempt_at, 5, case when status = 'delivered' then 200 else 500 end
     from webhook_deliveries`,
    event("due", MUST_STAY_EACH, old, true),
    event("failed", MUST_STAY_EACH, old, true),
    event("held", MUST_STAY_EACH, old, true),
    event("unfanned", MUST_STAY_EACH, old, false),
    event("recent", MUST_STAY_EACH, "now() - interval '1 day'", true),
    `create table bench_must_stay (kind text not null, delivery_id uuid, event_id integer not null)`,
    `with enabled as (select id from webhooks where enabled order by id limit 1),
       disabled as (select id from webhooks where not enabled),
       rows as (
         insert into webhook_deliveries
           (webhook_id, change_event_id, status, attempts, passes, next_attempt_at,
            last_attempt_at, delivered_at, created_at)
         select case when e.target_id like 'held-%' then (select id from disabled)
                  else (select id from enabled) end,
           e.id,
           case split_part(e.target_id, '-', 1) when 'failed' then 'failed'
             when 'recent' then 'delivered' else 'pending' end::delivery_status,
           case when e.target_id like 'due-%' or e.target_id like 'held-%' then 0 else 1 end,
           case when e.target_id like 'failed-%' then 2 else 0 end,
           case when e.target_id like 'recent-%' then null else e.occurred_at end,
           case when e.target_id like 'failed-%' or e.target_id like 'recent-%'
             then e.occurred_at + interval '1 s' end,
           case when e.target_id like 'recent-%' then e.occurred_at + interval '1 s' end,
           e.occurred_at
         from change_events e
         where split_part(e.target_id, '-', 1) in ('due', 'failed', 'held', 'recent')
         returning id, change_event_id
       )
     insert into bench_must_stay (kind, delivery_id, event_id)
     select split_part(e.target_id, '-', 1), rows.id, rows.change_event_id
     from rows join change_events e on e.id = rows.change_event_id`,
    `insert into webhook_attempts (delivery_id, attempted_at, duration_ms, status_code)
     select d.id, d.last_attempt_at, 5, case when d.status = 'delivered' then 200 else 500 end
     from webhook_deliveries d join bench_must_stay m on m.delivery_id = d.id
     where d.last_attempt_at is not null`,
    `insert into bench_must_stay (kind, event_id)
     select 'unfanned', id from change_events where target_id like 'unfanned-%'`,
    "vacuum analyze change_events",
    "vacuum analyze webhook_deliveries",
    "vacuum analyze webhook_attempts",
  ];
}

/** Every row that had to stay, by kind: the delivery, its attempts, and its change event. */
async function mustStayLeft(client: pg.Client) {
  const { rows } = await client.query<{ kind: string; seeded: number; left: number }>(`
    select m.kind, count(*)::int as seeded,
      count(*) filter (where e.id is not null
        and (m.delivery_id is null or (d.id is not null
          and (d.last_attempt_at is null
            or exists (select 1 from webhook_attempts a where a.delivery_id = d.id)))))::int as left
    from bench_must_stay m
    left join change_events e on e.id = m.event_id
    left join webhook_deliveries d on d.id = m.delivery_id
    group by m.kind order by m.kind`);
  return rows;
}

export async function measureRetention(
  settings: { databaseUrl: string; redisUrl: string },
  log: (line: string) => void,
): Promise<RetentionResults> {
  const database = await createDatabase(settings.databaseUrl);
  const port = await freePort();
  const env = benchServiceEnv(
    settings,
    database.url,
    port,
    process.env.RETENTION_BATCH_SIZE === undefined
      ? {}
      : { RETENTION_BATCH_SIZE: process.env.RETENTION_BATCH_SIZE },
  );
  const production = { ...env, NODE_ENV: "production" };
  const client = new pg.Client({ connectionString: database.url });
  let service: Started | undefined;
  try {
    const seeded = await seedDemoWorkspace(env);
    await client.connect();
    const { rows } = await client.query<{ id: string }>(
      "select id from organizations where slug = $1",
      [seeded.organizationSlug],
    );
    const organizationId = rows[0]?.id ?? "";
    log(`retention: seeding ${SETTLED} settled deliveries and ${MUST_STAY_EACH * 5} that stay`);
    const seedStarted = performance.now();
    for (const statement of seedStatements(organizationId)) await client.query(statement);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    log(`retention: seeded in ${seedSeconds.toFixed(0)} s`);

    // The API alone: no worker, so no relay fans out the events that must stay unfanned.
    service = startProcess("node", [...PRODUCTION_NODE_FLAGS, "dist/svc.mjs", "serve"], production);
    const url = `http://127.0.0.1:${port}`;
    await waitForOk(`${url}/readyz`, service);
    const writes = steadyWrites({ url, token: seeded.token, project: "picker-arm" }, WRITE_RATE);
    // The first seconds warm the API up: not counted.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const began = performance.now();
    await new Promise((resolve) => setTimeout(resolve, BEFORE_SECONDS * 1000));
    log("retention: svc retention run, under 50 writes/s");
    const purgeStarted = performance.now();
    const removed = JSON.parse(await svc(["retention", "run", "--json"], production)) as {
      deliveries: number;
      attempts: number;
      events: number;
    };
    const purgeEnded = performance.now();
    const all = await writes.stop();
    const purgeSeconds = (purgeEnded - purgeStarted) / 1000;
    log(`retention: removed ${JSON.stringify(removed)} in ${purgeSeconds.toFixed(1)} s`);
    const { rows: expired } = await client.query<{ n: number }>(`
      select count(*)::int as n from webhook_deliveries
      where status in ('delivered', 'exhausted') and created_at < now() - interval '30 days'`);
    return {
      settled: SETTLED,
      seedSeconds,
      purgeSeconds,
      removed,
      before: latencyOf(all, began, purgeStarted),
      during: latencyOf(all, purgeStarted, purgeEnded),
      mustStay: await mustStayLeft(client),
      expiredLeft: expired[0]?.n ?? -1,
    };
  } finally {
    if (service !== undefined) await stopProcess(service);
    await client.end().catch(() => undefined);
    await database.drop();
  }
}
