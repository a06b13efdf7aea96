import { sql } from "drizzle-orm";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { DEFAULT_POSTGRES_LIMITS, type PostgresLimits } from "../config.js";
import type { Tracer } from "../tracing/tracer.js";
import { type Database, findMigrationsFolder } from "./client.js";
import { PostgresListener } from "./notifications.js";
import { traceStatements } from "./statement-spans.js";
import { sendStatementsUnnamed } from "./unnamed-statements.js";

// node-postgres lives here, apart from the handle's type in client.ts, so that the embedded
// default never loads it.

// Arbitrary constant shared by every instance of the service, so that only one of them
// migrates at a time.
const MIGRATION_LOCK_KEY = 727_465_101;

export type PostgresOptions = Partial<PostgresLimits> & {
  /** Sees every SQL statement the service sends (trace logging, query-count checks). */
  onQuery?: (query: string) => void;
  /** Hears what goes wrong on the listening connection (it reconnects by itself). */
  onListenError?: (error: unknown) => void;
  /** Puts each statement in a span (tracing on). */
  tracer?: Tracer;
  /**
   * Where LISTEN and the advisory locks held across transactions go (DATABASE_LISTEN_URL): a
   * session of their own, apart from a transaction-mode pooler. The pool's own URL unless set.
   */
  sessionUrl?: string;
};

/** What every statement span says of the server (OpenTelemetry's database conventions). */
function serverAttributes(connectionString: string) {
  const url = new URL(connectionString);
  return {
    "db.system.name": "postgresql",
    "db.namespace": decodeURIComponent(url.pathname.slice(1)) || undefined,
    "server.address": url.hostname,
    "server.port": Number(url.port || 5432),
  };
}

function openPool(
  connectionString: string,
  limits: PostgresLimits,
  max: number,
  onConnect?: (client: pg.ClientBase) => Promise<void>,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    onConnect,
    // Waiting for a connection, new or from a full pool, ends in an error the API answers
    // with 503 instead of a request that hangs while the database is away.
    connectionTimeoutMillis: limits.connectTimeoutMs,
    statement_timeout: limits.statementTimeoutMs,
    idle_in_transaction_session_timeout: limits.idleInTransactionTimeoutMs,
    // Finds a peer that vanished without closing the connection.
    keepAlive: true,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  return pool;
}

// Holders of a session lock at once: a migration and a retention run.
const SESSION_POOL_SIZE = 2;

export function openPostgres(connectionString: string, options: PostgresOptions = {}): Database {
  const limits = { ...DEFAULT_POSTGRES_LIMITS, ...options };
  const sessionUrl = options.sessionUrl ?? connectionString;
  const listener = new PostgresListener(sessionUrl, options.onListenError ?? (() => {}));
  // Session state (LISTEN, advisory locks held across transactions, a connection's settings)
  // must stay on one server connection, which a transaction-mode pooler behind DATABASE_URL,
  // announced by a DATABASE_LISTEN_URL of its own, does not promise.
  const poolHoldsSessions = sessionUrl === connectionString;
  const pool = openPool(
    connectionString,
    limits,
    limits.poolSize,
    poolHoldsSessions ? (client) => listener.hearWritesOf(client) : undefined,
  );
  if (poolHoldsSessions) listener.hearWritesThrough(pool);
  if (!limits.preparedStatements) sendStatementsUnnamed(pool);
  const sessions = poolHoldsSessions ? pool : openPool(sessionUrl, limits, SESSION_POOL_SIZE);
  if (options.tracer !== undefined) {
    traceStatements(pool, options.tracer, serverAttributes(connectionString));
    if (sessions !== pool) traceStatements(sessions, options.tracer, serverAttributes(sessionUrl));
  }
  const onQuery = options.onQuery;
  const db = drizzlePg(pool, {
    casing: "snake_case",
    ...(onQuery === undefined ? {} : { logger: { logQuery: (query: string) => onQuery(query) } }),
  });
  return {
    db,
    kind: "postgres",
    listen: (channel, channelListener) => listener.listen(channel, channelListener),
    async migrate() {
      // A session: its lock and its `set` outlive the migrator's transactions.
      const client = await sessions.connect();
      try {
        // Another instance may hold the lock for as long as its migrations take.
        await client.query("set statement_timeout = 0");
        await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
        try {
          await migratePg(drizzlePg(client, { casing: "snake_case" }), {
            migrationsFolder: findMigrationsFolder(),
          });
        } finally {
          await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
          await client.query("reset statement_timeout");
        }
      } finally {
        client.release();
      }
    },
    async whileLocked(key, action) {
      // A session: the lock outlives the action's transactions, which run on the pool.
      const client = await sessions.connect();
      try {
        const locked = await client.query<{ locked: boolean }>(
          "select pg_try_advisory_lock($1) as locked",
          [key],
        );
        if (locked.rows[0]?.locked !== true) return null;
        try {
          return await action();
        } finally {
          await client.query("select pg_advisory_unlock($1)", [key]);
        }
      } finally {
        client.release();
      }
    },
    async ping() {
      await db.execute(sql`select 1`);
    },
    poolCounts: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
    async close() {
      await listener.close();
      await pool.end();
      if (sessions !== pool) await sessions.end();
    },
  };
}
