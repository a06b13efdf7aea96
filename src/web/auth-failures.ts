import { and, asc, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { authFailures } from "../db/schema/index.js";

/** The window AUTH_RATE_LIMIT_MAX counts over (README, "Configuration"). */
export const AUTH_FAILURE_WINDOW_SECONDS = 15 * 60;

// Rows older than the window are deleted by whichever write comes next, at most this often.
const PURGE_INTERVAL_MS = 60_000;

/** What one failure is counted against: the client address and the account it tried. */
export const failureKeys = {
  signInAddress: (ip: string) => `sign-in:ip:${ip}`,
  signInAccount: (email: string) => `sign-in:account:${email.trim().toLowerCase()}`,
  clientAddress: (ip: string) => `client:ip:${ip}`,
  client: (clientId: string) => `client:id:${clientId}`,
};

export type FailureAllowance = { limited: false } | { limited: true; retryAfterSeconds: number };

/**
 * Counts failed sign-ins and failed client authentications in `auth_failures` (shared by every
 * instance through the database). Only failures are recorded, so a member who signs in
 * correctly never uses up anything.
 */
export class AuthFailureLimiter {
  private lastPurge = 0;

  constructor(
    private readonly db: Db,
    /** Failures allowed per key in the window; the next attempt is refused. */
    private readonly max: number,
  ) {}

  /** Refused when any key has used up its allowance; `retryAfterSeconds` is when it frees up. */
  async check(keys: readonly string[]): Promise<FailureAllowance> {
    const rows = await this.db
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
    return retryAfterSeconds > 0 ? { limited: true, retryAfterSeconds } : { limited: false };
  }

  async record(keys: readonly string[]): Promise<void> {
    await this.purgeOld();
    await this.db.insert(authFailures).values(keys.map((key) => ({ key })));
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
