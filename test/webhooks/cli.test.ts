import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { importRoverWithSpec, type Pipeline, startPipeline } from "../support/pipeline.js";
import { Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;
let env: Record<string, string>;

beforeAll(async () => {
  p = await startPipeline();
  receiver = await new Receiver().start();
  env = { DATABASE_URL: p.config.databaseUrl ?? "" };
  await importRoverWithSpec(p.db, "clihooks");
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});

async function svc(...args: string[]) {
  return runCli(args, env);
}

describe("svc webhook", () => {
  let webhookId: string;

  it("registers a webhook and shows the secret once", async () => {
    const res = await svc(
      "webhook",
      "create",
      "--org",
      "clihooks",
      "--url",
      receiver.url("/cli"),
      "--events",
      "spec.published,change.created",
      "--json",
    );
    expect(res.stderr).toBe("");
    const created = JSON.parse(res.stdout);
    expect(Object.keys(created).sort()).toEqual(["id", "secret"]);
    expect(created.secret).toMatch(/^whsec_/);
    webhookId = created.id;
    const listed = JSON.parse((await svc("webhook", "list", "--org", "clihooks", "--json")).stdout);
    expect(listed).toEqual([
      {
        id: webhookId,
        url: receiver.url("/cli"),
        events: ["spec.published", "change.created"],
        enabled: true,
        heldDeliveries: 0,
        exhaustedDeliveries: 0,
        lastDelivery: null,
        last24Hours: { delivered: 0, failed: 0, successRate: null },
      },
    ]);
    expect(JSON.stringify(listed)).not.toContain(created.secret);
  });

  it.each([
    [["--url", "http://example.com/hook", "--events", "all"], /https/],
    [["--url", "https://user:pw@example.com/hook", "--events", "all"], /credentials/],
    [
      ["--url", "https://127.0.0.1:9/hook", "--events", "task.created,nope.happened"],
      /nope\.happened/,
    ],
    [["--url", "not a url", "--events", "all"], /url/],
  ])("refuses %j", async (args, reason) => {
    const res = await svc("webhook", "create", "--org", "clihooks", ...args, "--json");
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe("");
    expect(res.stderr).toMatch(reason);
  });

  it("delivers spec.published when a spec version is published through the CLI", async () => {
    const published = await svc(
      "spec",
      "publish",
      "--org",
      "clihooks",
      "--project",
      "rover",
      "--spec",
      "mass",
      "--version",
      "2",
      "--value",
      "11.5",
      "--json",
    );
    expect(published.stderr).toBe("");
    const { eventId } = JSON.parse(published.stdout);
    const [request] = await eventually(() =>
      receiver.on("/cli").length > 0 ? receiver.on("/cli") : null,
    );
    expect(request!.headers["x-service-event"]).toBe("spec.published");
    expect(JSON.parse(request!.rawBody.toString())).toMatchObject({
      id: eventId,
      type: "spec.published",
      action: "published",
      target_kind: "specification",
      actor_id: "system",
      diff: { before: { value: 12 }, after: { value: 11.5 } },
    });
  });

  it("lists deliveries, redelivers with the same id, and disables and enables", async () => {
    const deliveries = await eventually(async () => {
      const listed = JSON.parse(
        (await svc("webhook", "deliveries", "--id", webhookId, "--json")).stdout,
      );
      return listed.length > 0 && listed[0].status === "delivered" ? listed : null;
    });
    expect(deliveries[0]).toEqual({
      id: expect.any(String),
      eventId: expect.any(Number),
      type: "spec.published",
      status: "delivered",
      attempts: 1,
    });
    const before = receiver.on("/cli").length;
    const redelivered = await svc("webhook", "redeliver", "--delivery", deliveries[0].id);
    expect(redelivered.code).toBe(0);
    expect(receiver.on("/cli")).toHaveLength(before + 1);
    expect(receiver.on("/cli").at(-1)!.headers["x-service-delivery"]).toBe(deliveries[0].id);

    const disabled = await svc("webhook", "disable", "--id", webhookId, "--json");
    expect(JSON.parse(disabled.stdout)).toEqual({ id: webhookId, enabled: false });
    expect(
      JSON.parse((await svc("webhook", "list", "--org", "clihooks", "--json")).stdout)[0].enabled,
    ).toBe(false);
    expect((await svc("webhook", "enable", "--id", webhookId)).code).toBe(0);
    expect(
      JSON.parse((await svc("webhook", "list", "--org", "clihooks", "--json")).stdout)[0].enabled,
    ).toBe(true);
    const unknown = await svc("webhook", "disable", "--id", "0b6f4c2e-8f1a-4d55-9a1e-5c8f0d7e2a11");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No webhook/);
  });
});
