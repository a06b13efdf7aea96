import { sql } from "drizzle-orm";
import type { Config } from "../config.js";
import { type Db, rowsOf } from "../db/client.js";
import type { WebhookLog } from "./delivery.js";

// Convoy's thresholds (70 % over a window, at least 10 attempts; or 10 failures in a row), over
// a shorter window: a receiver that stopped answering is paused within a minute.
const MIN_ATTEMPTS = 10;
const FAILURE_RATIO = 0.7;
const CONSECUTIVE_FAILURES = 10;
// While a probe runs, its breaker stays "open" this much longer than the attempt can take, so
// no other worker probes at the same time; a worker that dies mid-probe only delays the next.
const PROBE_LEASE_MARGIN_MS = 30_000;

type Recent = { outcomes: { at: number; ok: boolean }[]; consecutiveFailures: number };

export type CircuitBreakers = {
  /** Counts one attempt's outcome; opens the webhook's breaker when the thresholds say so. */
  record(webhookId: string, ok: boolean): Promise<void>;
  /** Probes each webhook whose cooldown is over (the recovery loop's safety net calls it too). */
  probeDue(): Promise<void>;
  /** Stops probing, and waits for the probes its timers started. */
  close(): Promise<void>;
};

type Claimed = { id: string; cooldown_seconds: number; failures: number };

/**
 * A circuit breaker per webhook (docs/webhooks.md): each worker counts its own attempts, and the
 * state lives on the webhook's row so every worker honours it. After the cooldown one worker
 * probes; success releases what waited, failure doubles the cooldown up to the maximum.
 */
export function createCircuitBreakers(options: {
  db: Db;
  config: Config;
  logger: WebhookLog;
  /** The breaker of this webhook just opened here. */
  onOpen: (webhookId: string) => void;
  /** Attempts the probe delivery; resolves with its outcome, or null if it was not attempted. */
  probe: (deliveryId: string) => Promise<{ ok: boolean } | null>;
  /** Sends the deliveries of a webhook whose breaker closed, in event order. */
  release: (webhookId: string, organizationId: string) => void;
}): CircuitBreakers {
  const { db, config, logger } = options;
  const { windowSeconds, cooldownSeconds, maxCooldownSeconds } = config.webhooks.breaker;
  const recent = new Map<string, Recent>();
  const timers = new Set<NodeJS.Timeout>();
  const probes = new Set<Promise<void>>();
  let closed = false;

  const probeLater = (delayMs: number) => {
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      const probing = probeDue()
        .catch((err: unknown) => logger.error({ err }, "webhook breaker probe failed"))
        .finally(() => probes.delete(probing));
      probes.add(probing);
    }, delayMs);
    timer.unref();
    timers.add(timer);
  };

  const open = async (webhookId: string, failures: number, reason: string) => {
    // Only a closed breaker opens here: another worker may have opened it already.
    const opened = await db.execute(sql`
      update webhooks set
        circuit_open_until = now() + make_interval(secs => ${cooldownSeconds}),
        circuit_cooldown_seconds = ${cooldownSeconds},
        circuit_failures = ${failures}
      where id = ${webhookId} and circuit_open_until is null
      returning id`);
    options.onOpen(webhookId);
    if (rowsOf(opened).length === 0) return;
    logger.warn({ webhookId, failures, cooldownSeconds, reason }, "webhook breaker opened");
    probeLater(cooldownSeconds * 1000);
  };

  /** Opens it again: for twice the cooldown after a failed probe, the same when none was made. */
  const reopen = async ({ id, cooldown_seconds, failures }: Claimed, probeFailed: boolean) => {
    const cooldown = probeFailed
      ? Math.min(maxCooldownSeconds, cooldown_seconds * 2)
      : cooldown_seconds;
    const failuresNow = probeFailed ? failures + 1 : failures;
    await db.execute(sql`
      update webhooks set
        circuit_open_until = now() + make_interval(secs => ${cooldown}),
        circuit_cooldown_seconds = ${cooldown},
        circuit_failures = ${failuresNow}
      where id = ${id}`);
    if (probeFailed) {
      logger.warn({ webhookId: id, cooldownSeconds: cooldown }, "webhook breaker probe failed");
    }
    probeLater(cooldown * 1000);
  };

  const closeBreaker = async (webhookId: string) => {
    const [closedRow] = rowsOf<{ organization_id: string }>(
      await db.execute(sql`
        update webhooks set
          circuit_open_until = null, circuit_cooldown_seconds = null, circuit_failures = null
        where id = ${webhookId}
        returning organization_id`),
    );
    recent.delete(webhookId);
    logger.info({ webhookId }, "webhook breaker closed");
    if (closedRow !== undefined) options.release(webhookId, closedRow.organization_id);
  };

  const probeOne = async (claimed: Claimed) => {
    const [oldest] = rowsOf<{ id: string }>(
      await db.execute(sql`
        select id from webhook_deliveries
        where webhook_id = ${claimed.id} and status in ('pending', 'failed')
          and next_attempt_at <= now()
        order by change_event_id
        limit 1`),
    );
    const outcome = oldest === undefined ? null : await options.probe(oldest.id);
    // Only a real attempt tells: with nothing to send (or a disabled webhook) it waits a round.
    if (outcome === null) await reopen(claimed, false);
    else if (outcome.ok) await closeBreaker(claimed.id);
    else await reopen(claimed, true);
  };

  async function probeDue() {
    const leaseMs = config.webhooks.deliveryTimeoutMs + PROBE_LEASE_MARGIN_MS;
    const claimed = rowsOf<Claimed>(
      await db.execute(sql`
        update webhooks set circuit_open_until = now() + make_interval(secs => ${leaseMs / 1000})
        where circuit_open_until <= now()
        returning id, coalesce(circuit_cooldown_seconds, ${cooldownSeconds}) as cooldown_seconds,
          coalesce(circuit_failures, 0) as failures`),
    );
    await Promise.all(claimed.map(probeOne));
  }

  return {
    async record(webhookId, ok) {
      const now = Date.now();
      const state = recent.get(webhookId) ?? { outcomes: [], consecutiveFailures: 0 };
      recent.set(webhookId, state);
      const since = now - windowSeconds * 1000;
      state.outcomes = state.outcomes.filter((outcome) => outcome.at > since);
      state.outcomes.push({ at: now, ok });
      state.consecutiveFailures = ok ? 0 : state.consecutiveFailures + 1;
      if (ok && state.consecutiveFailures === 0 && state.outcomes.every((o) => o.ok)) {
        // Healthy webhooks keep no history: memory grows with failing webhooks only.
        recent.delete(webhookId);
        return;
      }
      const failures = state.outcomes.filter((outcome) => !outcome.ok).length;
      const reason =
        state.consecutiveFailures >= CONSECUTIVE_FAILURES
          ? `${state.consecutiveFailures} failed attempts in a row`
          : state.outcomes.length >= MIN_ATTEMPTS &&
              failures / state.outcomes.length >= FAILURE_RATIO
            ? `${failures} of ${state.outcomes.length} attempts failed within ${windowSeconds} s`
            : null;
      if (reason === null) return;
      recent.delete(webhookId);
      await open(webhookId, Math.max(failures, state.consecutiveFailures), reason);
    },
    probeDue,
    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all(probes);
    },
  };
}
