import { setTimeout as sleep } from "node:timers/promises";
import { and, asc, eq, inArray, lt, sql } from "drizzle-orm";
import { clientAddress } from "../../core/client-address.js";
import type { Db } from "../../db/client.js";
import { authFailures } from "../../db/schema/index.js";

/** The window AUTH_RATE_LIMIT_MAX counts over (docs/configuration.md). */
const AUTH_FAILURE_WINDOW_SECONDS = 15 * 60;

// Rows older than the window are deleted by whichever attempt comes next, at most this often.
const PURGE_INTERVAL_MS = 60_000;

// An attempt still unsettled after this long was cut off (a crash, a lost connection): it
// counts as the failure it may have been.
const ABANDONED_AFTER_SECONDS = 60;

// How long an attempt waits for attempts in flight to settle before it gives up with 429, and
// how often it looks.
const WAIT_FOR_SETTLED_MS = 10_000;
const SETTLED_POLL_MS = 25;

// First half of the two-part advisory lock key, so these locks never meet the service's
// single-key ones (migrations, demo seed); Postgres keeps the two key spaces apart.
const ATTEMPT_LOCK_NAMESPACE = 727_465_102;

// Across addresses an account is slowed, never refused (a stranger could otherwise lock its
// owner out): past the allowance, each attempt on it waits twice as long as it would have after
// one failure fewer, up to the cap.
const ACCOUNT_DELAY_FIRST_MS = 250;
const ACCOUNT_DELAY_CAP_MS = 3000;

const accountOf = (email: string) => email.trim().toLowerCase();

/**
 * What a failure counts against: the address (IPv6 by its /64) and the address with the account;
 * an account's failures from everywhere only slow it. Client ids are public, so a client is
 * never counted against itself (its 256-bit secret cannot be guessed anyway).
 */
export const failureKeys = {
  signInAddress: (ip: string) => `sign-in:ip:${clientAddress(ip)}`,
  signInAddressAndAccount: (ip: string, email: string) =>
    `sign-in:pair:${clientAddress(ip)}:${accountOf(email)}`,
  signInAccount: (email: string) => `sign-in:account:${accountOf(email)}`,
  clientAddress: (ip: string) => `client:ip:${clientAddress(ip)}`,
  /** Every sign-in attempt on an account, whatever its outcome (`AuthFailureLimiter.cap`). */
  signInAttempts: (email: string) => `sign-in:attempts:${accountOf(email)}`,
};

/** Caps on the attempts on one key, whatever their outcome: at once, and in a minute. */
export type AttemptCaps = { concurrent: number; perMinute: number };

const CAPPED_WINDOW_SECONDS = 60;

/** What an authentication attempt found: `failed` ones stay counted. */
export type AttemptOutcome<T> = { failed: boolean; value: T };

type Limited = { limited: true; retryAfterSeconds: number };

export type GuardedAttempt<T> = Limited | { limited: false; value: T };

/** Joined the attempts in flight: its rows, one per key. */
type Admitted = { limited: false; ids: string[] };

/** Room only once attempts in flight settle. */
type Busy = { limited: false; busy: true };

type CountedRow = { key: string; unsettled: boolean; secondsLeft: number };

/**
 * Counts failures in `auth_failures`, shared by every instance. The limit holds for parallel
 * attempts: one is admitted while failures plus attempts in flight stay under it, counted under
 * a per-key advisory lock (docs/architecture.md, "Failed authentication limit").
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
   * the refusal says nothing about the credentials). Failures on `throttledKey` (an account,
   * from any address) never refuse: they only delay the attempts that follow.
   */
  async guard<T>(
    keys: readonly string[],
    authenticate: () => Promise<AttemptOutcome<T>>,
    throttledKey?: string,
  ): Promise<GuardedAttempt<T>> {
    if (throttledKey !== undefined) await sleep(await this.throttleDelayMs(throttledKey));
    const reservation = await this.admit(keys);
    if (reservation.limited) return reservation;
    let outcome: AttemptOutcome<T>;
    try {
      outcome = await authenticate();
    } catch (error) {
      // A fault is not a wrong guess: it must not lock the member out.
      await this.forget(reservation.ids);
      throw error;
    }
    if (outcome.failed) {
      await this.settle(reservation.ids);
      if (throttledKey !== undefined)
        await this.db.insert(authFailures).values({ key: throttledKey });
    } else {
      await this.forget(reservation.ids);
    }
    return { limited: false, value: outcome.value };
  }

  /**
   * Runs `attempt` unless the key already has `caps.concurrent` attempts in flight or
   * `caps.perMinute` in the last minute; then it is refused at once, without being run, so the
   * refusal says nothing about the credentials. Every attempt counts, whatever its outcome.
   */
  async cap<T>(
    key: string,
    caps: AttemptCaps,
    attempt: () => Promise<T>,
  ): Promise<GuardedAttempt<T>> {
    await this.purgeOld();
    const admitted = await this.db.transaction(async (tx): Promise<Limited | Admitted> => {
      await tx.execute(
        sql`select pg_advisory_xact_lock(${ATTEMPT_LOCK_NAMESPACE}, hashtext(${key}))`,
      );
      const [recent] = await tx
        .select({
          total: sql<number>`count(*)::int`,
          inFlight: sql<number>`(count(*) filter (where ${authFailures.unsettled} and ${authFailures.occurredAt} > now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS})))::int`,
          secondsLeft: sql<number>`coalesce(ceil(extract(epoch from (min(${authFailures.occurredAt}) + make_interval(secs => ${CAPPED_WINDOW_SECONDS}) - now())))::int, 1)`,
        })
        .from(authFailures)
        .where(
          and(
            eq(authFailures.key, key),
            sql`${authFailures.occurredAt} > now() - make_interval(secs => ${CAPPED_WINDOW_SECONDS})`,
          ),
        );
      if ((recent?.inFlight ?? 0) >= caps.concurrent)
        return { limited: true, retryAfterSeconds: 1 };
      if ((recent?.total ?? 0) >= caps.perMinute) {
        return { limited: true, retryAfterSeconds: Math.max(1, recent?.secondsLeft ?? 1) };
      }
      const inserted = await tx
        .insert(authFailures)
        .values({ key, unsettled: true })
        .returning({ id: authFailures.id });
      return { limited: false, ids: inserted.map((row) => row.id) };
    });
    if (admitted.limited) return admitted;
    try {
      return { limited: false, value: await attempt() };
    } finally {
      await this.settle(admitted.ids);
    }
  }

  /** Nothing up to the allowance; then doubling from ACCOUNT_DELAY_FIRST_MS, capped. */
  private async throttleDelayMs(key: string): Promise<number> {
    const failures = (await this.countedRows(this.db, [key])).length;
    if (failures < this.max) return 0;
    return Math.min(ACCOUNT_DELAY_FIRST_MS * 2 ** (failures - this.max), ACCOUNT_DELAY_CAP_MS);
  }

  private async admit(keys: readonly string[]): Promise<Limited | Admitted> {
    await this.purgeOld();
    const giveUpAt = Date.now() + WAIT_FOR_SETTLED_MS;
    for (;;) {
      const reservation = await this.reserve(keys);
      if (!("busy" in reservation)) return reservation;
      if (Date.now() >= giveUpAt) return { limited: true, retryAfterSeconds: 1 };
      await sleep(SETTLED_POLL_MS);
    }
  }

  /** Joins the attempts in flight on every key, or says why not, as one step per key. */
  private async reserve(keys: readonly string[]): Promise<Limited | Busy | Admitted> {
    const distinctKeys = [...new Set(keys)].sort();
    return this.db.transaction(async (tx) => {
      // Sorted, so two attempts sharing keys always lock them in the same order.
      for (const key of distinctKeys) {
        await tx.execute(
          sql`select pg_advisory_xact_lock(${ATTEMPT_LOCK_NAMESPACE}, hashtext(${key}))`,
        );
      }
      const verdict = this.judge(distinctKeys, await this.countedRows(tx, distinctKeys));
      if (verdict !== null) return verdict;
      const inserted = await tx
        .insert(authFailures)
        .values(distinctKeys.map((key) => ({ key, unsettled: true })))
        .returning({ id: authFailures.id });
      return { limited: false, ids: inserted.map((row) => row.id) };
    });
  }

  /** Limited when a key's failures reached the limit, busy when attempts in flight fill it. */
  private judge(keys: readonly string[], rows: readonly CountedRow[]): Limited | Busy | null {
    let retryAfterSeconds = 0;
    let busy = false;
    for (const key of keys) {
      const counted = rows.filter((row) => row.key === key);
      const failures = counted.filter((row) => !row.unsettled);
      if (failures.length >= this.max) {
        // The key frees up when enough of its oldest failures leave the window.
        const freeing = failures[failures.length - this.max]?.secondsLeft ?? 1;
        retryAfterSeconds = Math.max(retryAfterSeconds, freeing, 1);
      } else if (counted.length >= this.max) {
        busy = true;
      }
    }
    if (retryAfterSeconds > 0) return { limited: true, retryAfterSeconds };
    return busy ? { limited: false, busy: true } : null;
  }

  /** The keys' rows in the window, oldest first; an abandoned attempt counts as settled. */
  private countedRows(db: Db, keys: readonly string[]): Promise<CountedRow[]> {
    return db
      .select({
        key: authFailures.key,
        unsettled: sql<boolean>`${authFailures.unsettled} and ${authFailures.occurredAt} > now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS})`,
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
  }

  private async settle(ids: readonly string[]): Promise<void> {
    await this.db
      .update(authFailures)
      .set({ unsettled: false })
      .where(inArray(authFailures.id, [...ids]));
  }

  private async forget(ids: readonly string[]): Promise<void> {
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
