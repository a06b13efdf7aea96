import { Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import type { Tracer } from "../tracing/tracer.js";
import {
  DEFAULT_BACKOFF_MS,
  DEFAULT_JOB_ATTEMPTS,
  type EnqueueOptions,
  type JobHandlers,
  type JobMap,
  type JobQueue,
} from "./queue.js";
import { redisClientClass } from "./traced-redis.js";

export type BullmqQueueOptions = {
  redisUrl: string;
  /** Keeps deployments (and test files) sharing one Redis apart. */
  prefix?: string;
  queueName?: string;
  logger: Logger;
  /**
   * How long a job stays locked to its worker without renewal; a worker that dies mid-job
   * has its job taken over (stalled-job recovery) after about this long.
   */
  lockDurationMs?: number;
  /** Puts each Redis command sent under a span in a span of its own (tracing on). */
  tracer?: Tracer;
};

export function createBullmqQueue<J extends JobMap>(options: BullmqQueueOptions): JobQueue<J> {
  const queueName = options.queueName ?? "workspace";
  const prefix = options.prefix ?? "svc";
  const Redis = redisClientClass(options.tracer);
  // A producer inside a request must fail fast rather than hang while Redis is away; while it
  // stalls, requests have their deadline (withEnqueueDeadline).
  const producerConnection = new Redis(options.redisUrl, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  });
  producerConnection.on("error", (err) =>
    options.logger.warn({ err }, "queue producer connection error"),
  );
  const queue = new Queue(queueName, { connection: producerConnection, prefix });
  let worker: Worker | undefined;
  const jobOptions = (enqueueOptions: EnqueueOptions = {}) => ({
    jobId: enqueueOptions.jobId,
    delay: enqueueOptions.delayMs,
    attempts: DEFAULT_JOB_ATTEMPTS,
    backoff: { type: "exponential", delay: DEFAULT_BACKOFF_MS },
    // Keep evidence of failures; Postgres holds the durable record anyway.
    removeOnComplete: { count: 1000 },
    removeOnFail: { count: 5000 },
  });

  return {
    async enqueue(name, payload, enqueueOptions) {
      await queue.add(name, payload, jobOptions(enqueueOptions));
    },

    async enqueueMany(name, jobs) {
      if (jobs.length === 0) return;
      await queue.addBulk(
        jobs.map((job) => ({ name, data: job.payload, opts: jobOptions(job.options) })),
      );
    },

    async startWorker(handlers: JobHandlers<J>, workerOptions = {}) {
      // Workers block on Redis and must wait out its restarts instead of failing jobs.
      const connection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
      connection.on("error", (err) =>
        options.logger.warn({ err }, "queue worker connection error"),
      );
      worker = new Worker(
        queueName,
        async (job) => {
          const handler = handlers[job.name as keyof J];
          if (handler === undefined) throw new Error(`no handler for job ${job.name}`);
          await handler(job.data as J[keyof J]);
        },
        {
          connection,
          prefix,
          concurrency: workerOptions.concurrency ?? 5,
          lockDuration: options.lockDurationMs ?? 30_000,
          stalledInterval: options.lockDurationMs ?? 30_000,
          autorun: true,
        },
      );
      worker.on("failed", (job, err) => {
        // Whether BullMQ will try again: never after an UnrecoverableError or the last attempt.
        const retry =
          err.name !== "UnrecoverableError" &&
          job !== undefined &&
          job.attemptsMade < (job.opts.attempts ?? 1);
        options.logger.warn({ err, job: job?.name, jobId: job?.id, retry }, "job failed");
      });
      await worker.waitUntilReady();
    },

    async schedule(name, cron, payload) {
      await queue.upsertJobScheduler(name, { pattern: cron }, { name, data: payload });
    },

    async counts() {
      const counts = await queue.getJobCounts("waiting", "active", "delayed");
      return {
        waiting: counts.waiting ?? 0,
        active: counts.active ?? 0,
        delayed: counts.delayed ?? 0,
      };
    },

    async close() {
      await worker?.close();
      await worker?.disconnect();
      await queue.close();
      producerConnection.disconnect();
    },
  };
}
