/** Job name → payload. Payloads carry ids only, never bodies or secrets. */
export type JobMap = Record<string, Record<string, string | number>>;

export type JobHandlers<J extends JobMap> = {
  [K in keyof J]: (payload: J[K]) => Promise<void>;
};

export type EnqueueOptions = {
  /** A deterministic id: a job with the same id already queued is not added twice. */
  jobId?: string;
  delayMs?: number;
};

/** Jobs by state, for the metrics: queued now, running, and waiting for their time. */
export type QueueCounts = { waiting: number; active: number; delayed: number };

/**
 * The one queue interface; BullMQ (with REDIS_URL) and the in-process adapter (embedded mode)
 * implement it, and the job code is shared.
 */
export interface JobQueue<J extends JobMap> {
  enqueue<K extends keyof J & string>(
    name: K,
    payload: J[K],
    options?: EnqueueOptions,
  ): Promise<void>;
  /** Queues many jobs of one kind in one round trip (BullMQ `addBulk`). */
  enqueueMany<K extends keyof J & string>(
    name: K,
    jobs: { payload: J[K]; options?: EnqueueOptions }[],
  ): Promise<void>;
  /** Starts consuming jobs with the given handlers; failed jobs are retried by the adapter. */
  startWorker(handlers: JobHandlers<J>, options?: { concurrency?: number }): Promise<void>;
  /** Runs `name` on a cron pattern (one scheduler per name, replaced on restart). */
  schedule<K extends keyof J & string>(name: K, cron: string, payload: J[K]): Promise<void>;
  counts(): Promise<QueueCounts>;
  close(): Promise<void>;
}

/**
 * A failure that retrying cannot fix: the adapter records it and does not retry. BullMQ knows it
 * by its name, so a process without Redis never loads BullMQ for it.
 */
export class UnrecoverableError extends Error {
  override name = "UnrecoverableError";
}

/** The queue refused a job or did not take it within its deadline: its Redis is away or stalled. */
export class QueueUnavailable extends Error {
  override name = "QueueUnavailable";
}

export const DEFAULT_JOB_ATTEMPTS = 5;
export const DEFAULT_BACKOFF_MS = 1000;
