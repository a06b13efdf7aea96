import { Queue } from "bullmq";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

// The relay hands each new delivery straight to its worker's dispatcher: the first attempt costs
// the queue nothing, so it goes out while the queue takes no jobs. Retries go through the queue.

let p: Pipeline;
let receiver: Receiver;
let queue: Queue;
beforeAll(async () => {
  [p, receiver] = await Promise.all([
    startPipeline({ WEBHOOK_QUICK_RETRIES: "1s" }),
    new Receiver().start(),
  ]);
  queue = new Queue("workspace", { connection: { url: TEST_REDIS_URL }, prefix: p.queuePrefix });
});
afterAll(async () => {
  await queue?.resume();
  await queue?.close();
  await p?.close();
  await receiver?.stop();
});

it("sends a first attempt while the queue is paused, and its retry once the queue runs", async () => {
  const path = "/first";
  receiver.respond(path, { status: 500 }, { status: 200 });
  const { createTask } = await workspaceWithWebhook(p, receiver, "first", path);
  await queue.pause();
  const taskId = await createTask("Sent without the queue");
  const [first] = await eventually(() => {
    const arrived = receiver.targetIds(path);
    return arrived.length > 0 ? arrived : null;
  });
  expect(first).toBe(taskId);
  // The retry is the queue's: nothing more arrives while it is paused.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(receiver.targetIds(path)).toEqual([taskId]);
  await queue.resume();
  await eventually(() => receiver.targetIds(path).length === 2);
  expect(receiver.targetIds(path)).toEqual([taskId, taskId]);
});
