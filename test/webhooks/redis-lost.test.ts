import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually } from "../support/eventually.js";
import { type Pipeline, startPipeline, workspaceWithWebhook } from "../support/pipeline.js";
import { freePort } from "../support/ports.js";
import { Receiver } from "../support/receiver.js";

/** A redis-server of this test's own, on a free port, that it may kill and start again. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("Ready to accept connections")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

let redis: ChildProcess;
let port: number;
let p: Pipeline;
let receiver: Receiver;

beforeAll(async () => {
  port = await freePort();
  redis = await startRedis(port);
  receiver = await new Receiver().start();
  p = await startPipeline({}, { redisUrl: `redis://127.0.0.1:${port}` });
});
afterAll(async () => {
  await p.close();
  await receiver.stop();
  await kill(redis);
});

it("delivers every change written while Redis was dead, once it is back empty", async () => {
  const { createTask } = await workspaceWithWebhook(p, receiver, "redis-lost", "/redis-lost");

  await kill(redis);
  const taskIds: string[] = [];
  for (let i = 0; i < 5; i++) taskIds.push(await createTask(`While Redis is dead ${i}`));
  redis = await startRedis(port);

  // The relay fanned these out but could not queue their jobs: the recovery loop finds them
  // once they are a minute overdue.
  const arrived = await eventually(() => {
    const targets = new Set(
      receiver.on("/redis-lost").map((request) => JSON.parse(request.rawBody.toString()).target_id),
    );
    return taskIds.every((id) => targets.has(id)) ? targets : null;
  }, 170_000);
  expect(arrived.size).toBe(taskIds.length);
}, 200_000);
