import { MISSED, withinDeadline } from "./deadline.js";
import { type JobMap, type JobQueue, QueueUnavailable } from "./queue.js";

/** Whatever keeps a job from the queue in time, its caller hears one error it can map (a 503). */
async function enqueued(deadlineMs: number, enqueue: Promise<void>): Promise<void> {
  let outcome: unknown;
  try {
    outcome = await withinDeadline(enqueue, deadlineMs);
  } catch (error) {
    throw new QueueUnavailable("The job queue refused the job", { cause: error });
  }
  if (outcome === MISSED) {
    throw new QueueUnavailable(`The job queue did not take the job within ${deadlineMs} ms`);
  }
}

/**
 * The queue as requests use it: each enqueue within `deadlineMs`, so a stalled Redis never holds
 * a request. The worker and the relay keep the queue itself, and wait for Redis as long as it
 * takes (a job they fail to queue would otherwise wait minutes for the recovery loop).
 */
export function withEnqueueDeadline<J extends JobMap>(
  queue: JobQueue<J>,
  deadlineMs: number,
): JobQueue<J> {
  return {
    enqueue: (name, payload, options) =>
      enqueued(deadlineMs, queue.enqueue(name, payload, options)),
    enqueueMany: (name, jobs) => enqueued(deadlineMs, queue.enqueueMany(name, jobs)),
    startWorker: (handlers, options) => queue.startWorker(handlers, options),
    schedule: (name, cron, payload) => queue.schedule(name, cron, payload),
    counts: () => queue.counts(),
    close: () => queue.close(),
  };
}
