import { and, asc, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { authFailures } from "../db/schema/index.js";

/** The window AUTH_RATE_LIMIT_MAX counts over (README, "Configuration"). */
export const AUTH_FAILURE_WINDOW_SECONDS = 15 * 60;

// Rows older than the window are deleted by whichever attempt comes next, at most this often.
const PURGE_INTERVAL_MS = 60_000;

// First half of the two-part advisory lock key, so these locks never meet the service's
// single-key ones (migrations, demo seed); Postgres keeps the two key spaces apart.
const ATTEMPT_LOCK_NAMESPACE = 727_465_102;

/** What one failure is counted against: the client address and the account it tried. */
export const failureKeys = {
  signInAddress: (ip: string) => `sign-in:ip:${ip}`,
  signInAccount: (email: string) => `sign-in:account:${email.trim().toLowerCase()}`,
  clientAddress: (ip: string) => `client:ip:${ip}`,
  client: (clientId: string) => `client:id:${clientId}`,
};

/** What an authentication attempt found: `failed` ones stay counted. */
export type AttemptOutcome<T> = { failed: boolean; value: T };

export type GuardedAttempt<T> =
  | { limited: true; retryAfterSeconds: number }
  | { limited: false; value: T };

type Reservation = { limited: true; retryAfterSeconds: number } | { limited: false; ids: string[] };

/**
 * Counts failed sign-ins and failed client authentications in `auth_failures` (shared by every
 * instance through the database). An attempt is counted as a failure from the moment it starts
 * and the count is forgiven when it succeeds, so parallel guesses cannot all slip past the
 * check before any of them is recorded, and a member who signs in correctly uses up nothing.
 */
export class AuthFailureLimiter {
  private lastPurge = 0;

  constructor(
    private readonly db: Db,
    /** Failures allowed per key in the window; the next attempt is refused. */
    private readonly max: number,
  ) {}

  /**
   * Runs `authenticate` unless a key has used up its allowance (then it is not run at all, so
   * the refusal says nothing about the credentials).
   */
  async guard<T>(
    keys: readonly string[],
    authenticate: () => Promise<AttemptOutcome<T>>,
  ): Promise<GuardedAttempt<T>> {
    const reservation = await this.reserve(keys);
    if (reservation.limited) return reservation;
    let outcome: AttemptOutcome<T>;
    try {
      outcome = await authenticate();
    } catch (error) {
      // A fault is not a wrong guess: it must not lock the member out.
      await this.release(reservation.ids);
      throw error;
    }
    if (!outcome.failed) await this.release(reservation.ids);
    return { limited: false, value: outcome.value };
  }

  /** Counts this attempt against every key, or refuses it, as one step per key. */
  private async reserve(keys: readonly string[]): Promise<Reservation> {
    await this.purgeOld();
    const distinctKeys = [...new Set(keys)].sort();
    return this.db.transaction(async (tx) => {
      // Sorted, so two attempts sharing keys always lock them in the same order.
      for (const key of distinctKeys) {
        await tx.execute(
          sql`select pg_advisory_xact_lock(${ATTEMPT_LOCK_NAMESPACE}, hashtext(${key}))`,
        );
      }
      const retryAfterSeconds = await this.secondsUntilAllowed(tx, distinctKeys);
      if (retryAfterSeconds > 0) return { limited: true, retryAfterSeconds };
      const rows = await tx
        .insert(authFailures)
        .values(distinctKeys.map((key) => ({ key })))
        .returning({ id: authFailures.id });
      return { limited: false, ids: rows.map((row) => row.id) };
    });
  }

  /** 0 while every key has allowance left; else when the last of them frees up. */
  private async secondsUntilAllowed(db: Db, keys: readonly string[]): Promise<number> {
    const rows = await db
      .select({
        key: authFailures.key,
        secondsLeft: sql<number>`ceil(extract(epoch from (${authFailures.occurredAt} + make_interval(secs => ${AUTH_FAILURE_WINDOW_SECONDS}) - now())))::int`,
      })
      .from(authFailures)
      .where(
        and(
          inArray(authFailures.key, [...keys]),
          sql`${authFailures.occurredAt} > now() - make_interval(secs => ${AUTH_FAILURE_WINDOW_SECONDS})`,
        ),
      )
      .orderBy(asc(authFailures.occurredAt));
    let retryAfterSeconds = 0;
    for (const key of keys) {
      const failures = rows.filter((row) => row.key === key);
      if (failures.length < this.max) continue;
      // The key frees up when enough of its oldest failures leave the window.
      const freeing = failures[failures.length - this.max];
      retryAfterSeconds = Math.max(retryAfterSeconds, Math.max(1, freeing?.secondsLeft ?? 1));
    }
    return retryAfterSeconds;
  }

  private async release(ids: readonly string[]): Promise<void> {
    await this.db.delete(authFailures).where(inArray(authFailures.id, [...ids]));
  }

  private async purgeOld(): Promise<void> {
    if (Date.now() - this.lastPurge < PURGE_INTERVAL_MS) return;
    this.lastPurge = Date.now();
    await this.db
      .delete(authFailures)
      .where(
        lt(
          authFailures.occurredAt,
          sql`now() - make_interval(secs => ${AUTH_FAILURE_WINDOW_SECONDS})`,
        ),
      );
  }
}
