import { CronExpressionParser } from "cron-parser";
import type { Logger } from "pino";
import {
  DEFAULT_BACKOFF_MS,
  DEFAULT_JOB_ATTEMPTS,
  type EnqueueOptions,
  type JobHandlers,
  type JobMap,
  type JobQueue,
  UnrecoverableError,
} from "./queue.js";

type PendingJob = {
  name: string;
  payload: Record<string, string | number>;
  jobId?: string;
  attempt: number;
};

/**
 * Embedded mode's queue: same interface and retry policy as the BullMQ adapter, kept in
 * memory. Jobs lost on a crash are found again from Postgres (the outbox is the record).
 */
export function createInProcessQueue<J extends JobMap>(logger: Logger): JobQueue<J> {
  const waiting: PendingJob[] = [];
  const queuedIds = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  let handlers: JobHandlers<J> | undefined;
  let concurrency = 5;
  let closed = false;

  const later = (delayMs: number, action: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, delayMs);
    timer.unref();
    timers.add(timer);
  };

  const push = (job: PendingJob, delayMs = 0) => {
    if (delayMs > 0) return later(delayMs, () => push(job));
    waiting.push(job);
    pump();
  };

  const runJob = async (job: PendingJob, jobHandlers: JobHandlers<J>) => {
    const handler = jobHandlers[job.name as keyof J];
    try {
      if (handler === undefined) throw new UnrecoverableError(`no handler for job ${job.name}`);
      await handler(job.payload as J[keyof J]);
      if (job.jobId !== undefined) queuedIds.delete(job.jobId);
    } catch (err) {
      const retry = !(err instanceof UnrecoverableError) && job.attempt < DEFAULT_JOB_ATTEMPTS;
      logger.warn(
        { err, job: job.name, jobId: job.jobId, attempt: job.attempt, retry },
        "job failed",
      );
      if (retry && !closed) {
        push({ ...job, attempt: job.attempt + 1 }, DEFAULT_BACKOFF_MS * 2 ** (job.attempt - 1));
      } else if (job.jobId !== undefined) {
        queuedIds.delete(job.jobId);
      }
    }
  };

  function pump() {
    while (handlers !== undefined && !closed && running.size < concurrency) {
      const job = waiting.shift();
      if (job === undefined) return;
      const run = runJob(job, handlers).finally(() => {
        running.delete(run);
        pump();
      });
      running.add(run);
    }
  }

  const enqueue = (name: string, payload: PendingJob["payload"], options: EnqueueOptions = {}) => {
    if (closed) throw new Error("queue is closed");
    if (options.jobId !== undefined) {
      if (queuedIds.has(options.jobId)) return;
      queuedIds.add(options.jobId);
    }
    push({ name, payload, jobId: options.jobId, attempt: 1 }, options.delayMs ?? 0);
  };

  return {
    async enqueue(name, payload, options) {
      enqueue(name, payload, options);
    },

    async enqueueMany(name, jobs) {
      for (const job of jobs) enqueue(name, job.payload, job.options);
    },

    async startWorker(jobHandlers, options = {}) {
      handlers = jobHandlers;
      concurrency = options.concurrency ?? concurrency;
      pump();
    },

    async schedule(name, cron, payload) {
      const expression = CronExpressionParser.parse(cron);
      const arm = () => {
        const delay = Math.max(0, expression.next().getTime() - Date.now());
        later(delay, () => {
          push({ name, payload, attempt: 1 });
          arm();
        });
      };
      arm();
    },

    async counts() {
      return { waiting: waiting.length, active: running.size, delayed: timers.size };
    },

    async close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...running]);
    },
  };
}
