import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

/** Embedded mode runs the same job code on the in-process queue adapter. */
let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  p = await startPipeline({}, { inProcessQueue: true });
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});

describe("the in-process queue", () => {
  it("delivers a change with the same job code as BullMQ", async () => {
    receiver.respond("/embedded", { status: 200 });
    const { createTask } = await workspaceWithWebhook(p, receiver, "embedded-hooks", "/embedded");
    const taskId = await createTask("Local");
    const [request] = await eventually(() =>
      receiver.on("/embedded").length > 0 ? receiver.on("/embedded") : null,
    );
    expect(JSON.parse(request!.rawBody.toString())).toMatchObject({
      type: "task.created",
      target_id: taskId,
    });
  });
});
