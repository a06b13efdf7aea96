import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createBullmqQueue } from "../../src/queue/bullmq-queue.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import { type JobQueue, UnrecoverableError } from "../../src/queue/queue.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";

type TestJobs = { record: { value: string }; fail: { value: string } };

const logger = pino({ level: "silent" });
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
});

describe.each(adapters)("%s queue", (_name, create) => {
  it("runs enqueued jobs with the shared handlers, once per job id", async () => {
    const queue = create();
    open = queue;
    const seen: string[] = [];
    await queue.enqueue("record", { value: "early" });
    await queue.enqueue("record", { value: "dedup" }, { jobId: "same" });
    await queue.enqueue("record", { value: "dedup" }, { jobId: "same" });
    await queue.startWorker({
      record: async ({ value }) => void seen.push(value),
      fail: async () => {},
    });
    await queue.enqueue("record", { value: "late" }, { delayMs: 50 });
    await eventually(() => seen.length >= 3);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(seen.sort()).toEqual(["dedup", "early", "late"]);
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
    await eventually(() => calls.flaky === 2);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(calls).toEqual({ flaky: 2, doomed: 1 });
  });
});
