/**
 * Why a delivery attempt runs: its scheduled time came (first try, quick retry, or recovery of a
 * lost job), the daily pass claimed it, an admin asked for it, or it probes an open breaker.
 */
export type DeliveryTrigger = "scheduled" | "pass" | "manual" | "probe";

/** Every job the worker runs, by name; payloads carry ids only, never bodies or secrets. */
export type WorkspaceJobs = {
  deliverWebhook: { deliveryId: string; trigger: DeliveryTrigger };
  /**
   * The daily pass, or an admin's for one organisation or webhook; `after…` (the last delivery
   * claimed, in event order) when it goes on where it stopped for lack of room in the queue.
   */
  runRetryPass: {
    organizationId?: string;
    webhookId?: string;
    afterEventId?: number;
    afterWebhookId?: string;
  };
};
