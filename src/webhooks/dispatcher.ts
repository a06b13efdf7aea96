import type { DeliveryTrigger } from "../queue/jobs.js";
import type { WebhookLog } from "./delivery.js";

/** A delivery that is due, with what the caps are counted by. */
export type DueDelivery = {
  deliveryId: string;
  trigger: DeliveryTrigger;
  webhookId: string;
  organizationId: string;
};

export type DispatchLimits = {
  /** HTTP attempts in flight at once, in total (WORKER_CONCURRENCY). */
  concurrency: number;
  maxInFlightPerWebhook: number;
  maxInFlightPerOrganization: number;
  /** Deliveries waiting in memory, in total and per webhook. */
  maxPending: number;
  maxPendingPerWebhook: number;
};

/**
 * `queued`: it will be attempted; `duplicate`: already waiting or in flight here; `left`: no room
 * (or closing), so it stays due in Postgres for the refill or the recovery loop.
 */
type SubmitResult = "queued" | "duplicate" | "left";

export type DeliveryDispatcher = {
  /**
   * A delivery from the queue. While its webhook's line is refilling from Postgres it is left
   * there, due, for the refill to bring in event order rather than ahead of older ones.
   */
  submit(delivery: DueDelivery): SubmitResult;
  /** Forgets a webhook's waiting deliveries (its breaker opened); they stay due in Postgres. */
  evict(webhookId: string): void;
  /** Takes a webhook's due deliveries from Postgres, in event order (its breaker closed). */
  wake(webhookId: string, organizationId: string): void;
  /** Stops taking deliveries, forgets the waiting ones and waits for the attempts in flight. */
  close(): Promise<void>;
};

type WebhookLine = {
  organizationId: string;
  waiting: DueDelivery[];
  inFlight: number;
  /** Deliveries were left in Postgres for lack of room: refill from there when there is some. */
  overflowed: boolean;
  refilling: boolean;
};

/**
 * Runs attempts outside the queue's slots, round-robin among webhooks under their caps, so a slow
 * receiver waits behind itself only (docs/webhooks.md, "Fairness"). It holds ids of deliveries
 * still due in Postgres, so a crash loses nothing.
 */
export function createDeliveryDispatcher(options: {
  limits: DispatchLimits;
  logger: WebhookLog;
  /** One attempt; it calls `answered` once the receiver's answer is in, to free its slot early. */
  attempt: (delivery: DueDelivery, answered: () => void) => Promise<void>;
  /** A webhook's due deliveries in Postgres, oldest event first, at most `limit`. */
  refill: (webhookId: string, organizationId: string, limit: number) => Promise<DueDelivery[]>;
}): DeliveryDispatcher {
  const { limits, logger, attempt } = options;
  // Insertion order is the round-robin order; a webhook is removed when it has nothing left.
  const lines = new Map<string, WebhookLine>();
  const inFlightByOrganization = new Map<string, number>();
  const known = new Set<string>();
  const running = new Set<Promise<void>>();
  let pending = 0;
  let inFlight = 0;
  let closed = false;

  const startable = (line: WebhookLine) =>
    line.waiting.length > 0 &&
    line.inFlight < limits.maxInFlightPerWebhook &&
    (inFlightByOrganization.get(line.organizationId) ?? 0) < limits.maxInFlightPerOrganization;

  const start = (webhookId: string, line: WebhookLine) => {
    const delivery = line.waiting.shift();
    if (delivery === undefined) return;
    pending--;
    inFlight++;
    line.inFlight++;
    const { organizationId } = line;
    inFlightByOrganization.set(
      organizationId,
      (inFlightByOrganization.get(organizationId) ?? 0) + 1,
    );
    let answered = false;
    // The slot is the receiver's: it is free once the answer is in, while the outcome is written.
    const free = () => {
      if (answered) return;
      answered = true;
      inFlight--;
      line.inFlight--;
      const left = (inFlightByOrganization.get(organizationId) ?? 1) - 1;
      if (left === 0) inFlightByOrganization.delete(organizationId);
      else inFlightByOrganization.set(organizationId, left);
      if (line.overflowed && line.waiting.length <= limits.maxPendingPerWebhook / 2) {
        refill(webhookId, line);
      }
      if (line.inFlight === 0 && line.waiting.length === 0 && !line.refilling) {
        lines.delete(webhookId);
      }
      pump();
    };
    const run = attempt(delivery, free)
      .catch((err: unknown) =>
        logger.error({ err, deliveryId: delivery.deliveryId }, "webhook attempt failed"),
      )
      .finally(() => {
        running.delete(run);
        known.delete(delivery.deliveryId);
        free();
      });
    running.add(run);
    // To the back of the round: the others get their turn before this webhook's next one.
    lines.delete(webhookId);
    lines.set(webhookId, line);
  };

  // The oldest due rows include those already here (waiting or in flight): ask for enough more.
  const refill = (webhookId: string, line: WebhookLine) => {
    if (line.refilling || closed) return;
    line.refilling = true;
    line.overflowed = false;
    const limit = limits.maxPendingPerWebhook + limits.maxInFlightPerWebhook;
    void options
      .refill(webhookId, line.organizationId, limit)
      .then((due) => {
        for (const delivery of due) admit(delivery);
        // A full answer may have more behind it.
        if (due.length >= limit) line.overflowed = true;
      })
      .catch((err: unknown) =>
        logger.error({ err, webhookId }, "webhook line refill failed; left for recovery"),
      )
      .finally(() => {
        line.refilling = false;
        // Some were left while this ran and no attempt of this webhook will finish to ask again.
        const stalled = line.inFlight === 0 && pending < limits.maxPending;
        if (stalled && line.overflowed && line.waiting.length <= limits.maxPendingPerWebhook / 2) {
          refill(webhookId, line);
        } else if (line.inFlight === 0 && line.waiting.length === 0) {
          if (lines.get(webhookId) === line) lines.delete(webhookId);
        }
      });
  };

  const lineOf = (webhookId: string, organizationId: string): WebhookLine =>
    lines.get(webhookId) ?? {
      organizationId,
      waiting: [],
      inFlight: 0,
      overflowed: false,
      refilling: false,
    };

  function submit(delivery: DueDelivery): SubmitResult {
    const line = lines.get(delivery.webhookId);
    const fedFromPostgres = line !== undefined && (line.overflowed || line.refilling);
    if (fedFromPostgres && delivery.trigger !== "manual" && !known.has(delivery.deliveryId)) {
      // Asks for one more refill, so one already under way does not miss it.
      line.overflowed = true;
      return "left";
    }
    return admit(delivery);
  }

  function admit(delivery: DueDelivery): SubmitResult {
    if (known.has(delivery.deliveryId)) return "duplicate";
    if (closed) return "left";
    const line = lineOf(delivery.webhookId, delivery.organizationId);
    if (pending >= limits.maxPending || line.waiting.length >= limits.maxPendingPerWebhook) {
      // A line with nothing here is not kept for a refill: the recovery loop finds the rest.
      if (line.waiting.length === 0) return "left";
      if (!line.overflowed) {
        logger.warn(
          { webhookId: delivery.webhookId },
          "webhook line full; the rest waits in Postgres",
        );
      }
      line.overflowed = true;
      return "left";
    }
    lines.set(delivery.webhookId, line);
    known.add(delivery.deliveryId);
    pending++;
    line.waiting.push(delivery);
    pump();
    return "queued";
  }

  function pump() {
    while (!closed && inFlight < limits.concurrency) {
      let next: [string, WebhookLine] | undefined;
      for (const entry of lines) {
        if (startable(entry[1])) {
          next = entry;
          break;
        }
      }
      if (next === undefined) return;
      start(...next);
    }
  }

  return {
    submit,

    evict(webhookId) {
      const line = lines.get(webhookId);
      if (line === undefined) return;
      for (const delivery of line.waiting) known.delete(delivery.deliveryId);
      pending -= line.waiting.length;
      line.waiting = [];
      line.overflowed = false;
      if (line.inFlight === 0 && !line.refilling) lines.delete(webhookId);
    },

    wake(webhookId, organizationId) {
      if (closed) return;
      const line = lineOf(webhookId, organizationId);
      lines.set(webhookId, line);
      refill(webhookId, line);
    },

    async close() {
      closed = true;
      for (const webhookId of [...lines.keys()]) this.evict(webhookId);
      await Promise.allSettled([...running]);
    },
  };
}
