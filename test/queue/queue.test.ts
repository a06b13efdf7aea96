import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createBullmqQueue } from "../../src/queue/bullmq-queue.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import { type JobQueue, UnrecoverableError } from "../../src/queue/queue.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";

type TestJobs = { record: { value: string }; fail: { value: string } };

/** The adapters' "job failed" log lines, as the queue wrote them. */
let failures: { job?: string; retry?: boolean }[] = [];
const logger = pino(
  { level: "warn" },
  { write: (line: string) => void failures.push(JSON.parse(line)) },
);
const adapters: [string, () => JobQueue<TestJobs>][] = [
  ["in-process", () => createInProcessQueue<TestJobs>(logger)],
  [
    "BullMQ",
    () =>
      createBullmqQueue<TestJobs>({
        redisUrl: TEST_REDIS_URL,
        prefix: `test-${randomBytes(6).toString("hex")}`,
        logger,
      }),
  ],
];

let open: JobQueue<TestJobs> | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  failures = [];
});

describe.each(adapters)("%s queue", (_name, create) => {
  it("runs enqueued jobs with the shared handlers, once per job id", async () => {
    const queue = create();
    open = queue;
    const seen: string[] = [];
    await queue.enqueue("record", { value: "early" });
    await queue.enqueue("record", { value: "dedup" }, { jobId: "same" });
    await queue.enqueue("record", { value: "dedup" }, { jobId: "same" });
    // One at a time and in order: once a job queued after all of them has run, a duplicate
    // would have run before it.
    await queue.startWorker(
      { record: async ({ value }) => void seen.push(value), fail: async () => {} },
      { concurrency: 1 },
    );
    await queue.enqueue("record", { value: "late" }, { delayMs: 50 });
    await eventually(() => seen.includes("late"));
    await queue.enqueue("record", { value: "marker" });
    await eventually(() => seen.includes("marker"));
    expect(seen.sort()).toEqual(["dedup", "early", "late", "marker"]);
  });

  it("runs a scheduled job on its cron pattern", async () => {
    const queue = create();
    open = queue;
    const seen: string[] = [];
    await queue.startWorker({
      record: async ({ value }) => void seen.push(value),
      fail: async () => {},
    });
    await queue.schedule("record", "* * * * * *", { value: "tick" });
    await eventually(() => seen.length >= 2);
    expect(seen.every((value) => value === "tick")).toBe(true);
  });

  it("retries a failing job and never retries an unrecoverable one", async () => {
    const queue = create();
    open = queue;
    const calls: Record<string, number> = {};
    await queue.startWorker({
      record: async ({ value }) => {
        calls[value] = (calls[value] ?? 0) + 1;
        if (calls[value] < 2) throw new Error("transient");
      },
      fail: async ({ value }) => {
        calls[value] = (calls[value] ?? 0) + 1;
        throw new UnrecoverableError("permanent");
      },
    });
    await queue.enqueue("record", { value: "flaky" });
    await queue.enqueue("fail", { value: "doomed" });
    // The queue says, as it records each failure, whether it will try again.
    await eventually(() => calls.flaky === 2 && failures.some((failure) => failure.job === "fail"));
    expect(failures.filter((failure) => failure.job === "fail")).toEqual([
      expect.objectContaining({ retry: false }),
    ]);
    expect(failures.filter((failure) => failure.job === "record")).toEqual([
      expect.objectContaining({ retry: true }),
    ]);
    expect(calls).toEqual({ flaky: 2, doomed: 1 });
  });
});
