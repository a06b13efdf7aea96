import type { Logger } from "pino";
import type { Principal } from "../../core/principal.js";
import type { Db } from "../../db/client.js";
import { ForgettingCache } from "../../db/notifications.js";
import { findLiveToken, recordTokenUse, tokenHashOf } from "./service.js";

/** The channel the migrations' triggers notify when principals of an organisation change. */
const PRINCIPALS_CHANGED = "principals_changed";

// A principal is kept at most this long even when nothing says it changed; notifications are
// what make revocation immediate, this only bounds what the process holds.
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;
// Last use is stamped at most once a minute, so that reads do not each cost a write.
const LAST_USE_GRANULARITY_MS = 60_000;

type Entry = {
  principal: Principal;
  expiresAt: number;
  cachedAt: number;
  lastUseRecordedAt: number;
};

/**
 * Live tokens' principals, kept so a request costs no round trip for its token. Revocation still
 * holds: triggers notify `principals_changed`, and while that channel is not heard nothing is
 * served from memory (docs/architecture.md, "Principal cache").
 */
export class PrincipalCache extends ForgettingCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly logger: Pick<Logger, "warn">,
  ) {
    super(PRINCIPALS_CHANGED);
  }

  /** The principal of a presented token, or null when it is not a live token. */
  async authenticate(token: string): Promise<Principal | null> {
    const hash = tokenHashOf(token);
    if (hash === null) return null;
    const now = Date.now();
    const cached = this.entries.get(hash);
    if (cached !== undefined && this.heard && this.isFresh(cached, now)) {
      this.recordUseWhenDue(cached, now);
      return cached.principal;
    }
    // A change committed while the query ran may be missing from its result; its notification
    // then arrives before the result is kept (and it is not), or after (and drops it).
    const changesBefore = this.changes;
    const live = await findLiveToken(this.db, hash);
    if (live === null) {
      this.entries.delete(hash);
      return null;
    }
    const entry: Entry = {
      principal: live.principal,
      expiresAt: live.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY,
      cachedAt: now,
      lastUseRecordedAt: live.lastUsedAt?.getTime() ?? 0,
    };
    if (this.heard && this.changes === changesBefore) this.remember(hash, entry);
    this.recordUseWhenDue(entry, now);
    return live.principal;
  }

  /** Something about the organisation's tokens changed. */
  protected dropOrganization(organizationId: string): void {
    for (const [hash, entry] of this.entries) {
      if (entry.principal.organization.id === organizationId) this.entries.delete(hash);
    }
  }

  protected dropAll(): void {
    this.entries.clear();
  }

  private isFresh(entry: Entry, now: number): boolean {
    return now < entry.expiresAt && now - entry.cachedAt < MAX_AGE_MS;
  }

  private remember(hash: string, entry: Entry): void {
    this.entries.delete(hash);
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(hash, entry);
  }

  /** Stamps last use off the request's path; a failure is logged, and retried on a later use. */
  private recordUseWhenDue(entry: Entry, now: number): void {
    if (now - entry.lastUseRecordedAt < LAST_USE_GRANULARITY_MS) return;
    entry.lastUseRecordedAt = now;
    recordTokenUse(this.db, entry.principal.tokenId).catch((err: unknown) => {
      entry.lastUseRecordedAt = 0;
      this.logger.warn({ err, tokenId: entry.principal.tokenId }, "token last use not recorded");
    });
  }
}
