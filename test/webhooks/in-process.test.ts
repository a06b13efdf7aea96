import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhook } from "../../src/webhooks/service.js";
import { api } from "../support/api.js";
import { eventually } from "../support/eventually.js";
import { importFixture, mintToken, workspaceDocument } from "../support/fixtures.js";
import { type Pipeline, startPipeline } from "../support/pipeline.js";
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
    const ws = await importFixture(
      p.db,
      workspaceDocument("embedded-hooks", {
        projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
      }),
    );
    receiver.respond("/embedded", { status: 200 });
    await createWebhook(
      p.db,
      { secretKey: p.config.secretKey, production: false },
      {
        organizationId: ws.organization.id,
        url: receiver.url("/embedded"),
        events: ["task.created"],
      },
    );
    const token = await mintToken(p.db, ws);
    const res = await api(p.app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Local" },
    });
    expect(res.status).toBe(200);
    const [request] = await eventually(() =>
      receiver.on("/embedded").length > 0 ? receiver.on("/embedded") : null,
    );
    expect(JSON.parse(request!.rawBody.toString())).toMatchObject({
      type: "task.created",
      target_id: res.body.data.id,
    });
  });
});
