import type { SessionStore } from "@fastify/session";
import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Session } from "fastify";
import type { Db } from "../db/client.js";
import { sessions } from "../db/schema/index.js";
import { hashSecret } from "../modules/tokens/service.js";

type Callback = (error?: unknown) => void;
type GetCallback = (error: unknown, session?: Session | null) => void;

// Expired rows are deleted by whichever write comes next, at most this often per process.
const PURGE_INTERVAL_MS = 60_000;

/**
 * @fastify/session's store over the `sessions` table, so it works on Postgres and PGlite alike.
 * Rows are keyed by a hash of the session id: a copy of the table does not let anyone sign in.
 */
export class DatabaseSessionStore implements SessionStore {
  private lastPurge = 0;

  constructor(
    private readonly db: Db,
    /** Lifetime of a session row when its cookie carries no expiry of its own. */
    private readonly maxAgeMs: number,
  ) {}

  get(sessionId: string, callback: GetCallback): void {
    this.db
      .select({ data: sessions.data })
      .from(sessions)
      .where(and(eq(sessions.id, hashSecret(sessionId)), gt(sessions.expiresAt, sql`now()`)))
      .limit(1)
      .then(
        ([row]) => callback(null, (row?.data as Session | undefined) ?? null),
        (error: unknown) => callback(error),
      );
  }

  set(sessionId: string, session: Session, callback: Callback): void {
    const data = JSON.parse(JSON.stringify(session)) as Record<string, unknown>;
    const expiresAt = this.expiryOf(session);
    this.purgeExpired()
      .then(() =>
        this.db
          .insert(sessions)
          .values({ id: hashSecret(sessionId), data, expiresAt })
          .onConflictDoUpdate({ target: sessions.id, set: { data, expiresAt } }),
      )
      .then(
        () => callback(),
        (error: unknown) => callback(error),
      );
  }

  destroy(sessionId: string, callback: Callback): void {
    this.db
      .delete(sessions)
      .where(eq(sessions.id, hashSecret(sessionId)))
      .then(
        () => callback(),
        (error: unknown) => callback(error),
      );
  }

  private expiryOf(session: Session): Date {
    const expires = session.cookie?.expires;
    if (expires instanceof Date && !Number.isNaN(expires.getTime())) return expires;
    return new Date(Date.now() + this.maxAgeMs);
  }

  private async purgeExpired(): Promise<void> {
    if (Date.now() - this.lastPurge < PURGE_INTERVAL_MS) return;
    this.lastPurge = Date.now();
    await this.db.delete(sessions).where(lt(sessions.expiresAt, sql`now()`));
  }
}
