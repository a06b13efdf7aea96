import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listWebhooks, unsentDeliveriesOf, updateWebhook } from "../../src/webhooks/service.js";
import { runCli } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { importRoverWithSpec, type Pipeline, startPipeline } from "../support/pipeline.js";
import { isSignedWith, type Received, Receiver } from "../support/receiver.js";

let p: Pipeline;
let receiver: Receiver;
let env: Record<string, string>;
let organizationId: string;
let nextVersion = 2;

beforeAll(async () => {
  p = await startPipeline();
  receiver = await new Receiver().start();
  env = { DATABASE_URL: p.config.databaseUrl ?? "" };
  organizationId = (await importRoverWithSpec(p.db, "lifehooks")).organization.id;
});
afterAll(async () => {
  await receiver.stop();
  await p.close();
});

async function svc(...args: string[]) {
  return runCli(args, env);
}

/** Publishes the next spec version through the CLI: one spec.published change event. */
async function publishSpec(): Promise<void> {
  const version = String(nextVersion++);
  const res = await svc(
    ...["spec", "publish", "--org", "lifehooks", "--project", "rover", "--spec", "mass"],
    ...["--version", version, "--value", version],
  );
  expect(res.stderr).toBe("");
}

async function nextRequestOn(path: string, seen: number): Promise<Received> {
  return eventually(() => receiver.on(path)[seen] ?? null);
}

async function createHook(path: string, events: string): Promise<{ id: string; secret: string }> {
  const res = await svc(
    ...["webhook", "create", "--org", "lifehooks", "--url", receiver.url(path)],
    ...["--events", events, "--json"],
  );
  expect(res.stderr).toBe("");
  return JSON.parse(res.stdout);
}

async function listed() {
  return JSON.parse((await svc("webhook", "list", "--org", "lifehooks", "--json")).stdout);
}

describe("svc webhook update, rotate-secret and delete", () => {
  it("rotates the secret: the running worker signs the next attempt with the new one only", async () => {
    const hook = await createHook("/rotate", "spec.published");
    await publishSpec();
    const first = await nextRequestOn("/rotate", 0);
    expect(isSignedWith(hook.secret, first)).toBe(true);

    const res = await svc("webhook", "rotate-secret", "--id", hook.id, "--json");
    expect(res.stderr).toBe("");
    const rotated = JSON.parse(res.stdout);
    expect(Object.keys(rotated).sort()).toEqual(["id", "secret"]);
    expect(rotated.id).toBe(hook.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(hook.secret);
    expect(JSON.stringify(await listed())).not.toContain(rotated.secret);

    await publishSpec();
    const second = await nextRequestOn("/rotate", 1);
    expect(isSignedWith(rotated.secret, second)).toBe(true);
    expect(isSignedWith(hook.secret, second)).toBe(false);

    const text = await svc("webhook", "rotate-secret", "--id", hook.id);
    expect(text.stdout).toMatch(/shown once.*whsec_/);
    expect((await svc("webhook", "delete", "--id", hook.id)).code).toBe(0);
  });

  it("updates the URL and the events, checking a new URL as registration does", async () => {
    const hook = await createHook("/before", "spec.published");
    const moved = await svc(
      ...["webhook", "update", "--id", hook.id, "--url", receiver.url("/after")],
      ...["--events", "task.created,spec.published"],
    );
    expect(moved.stderr).toBe("");
    expect(moved.stdout).toMatch(/updated/);
    const [row] = (await listed()).filter((webhook: { id: string }) => webhook.id === hook.id);
    expect(row).toMatchObject({
      url: receiver.url("/after"),
      events: ["task.created", "spec.published"],
    });

    await publishSpec();
    await nextRequestOn("/after", 0);
    expect(receiver.on("/before")).toHaveLength(0);

    for (const [args, reason] of [
      [["--url", "https://169.254.169.254/latest/meta-data"], /url: .*(address|private|link)/i],
      [["--url", "https://10.0.0.7/hook"], /url: /],
      [["--url", "http://example.com/hook"], /https/],
      [["--url", "https://user:pw@example.com/hook"], /credentials/],
      [["--events", "task.created,nope.happened"], /nope\.happened/],
      [[], /--url, --events or both/],
    ] as const) {
      const refused = await svc("webhook", "update", "--id", hook.id, ...args);
      expect(refused.code, args.join(" ")).not.toBe(0);
      expect(refused.stderr).toMatch(reason);
    }
    const [unchanged] = (await listed()).filter(
      (webhook: { id: string }) => webhook.id === hook.id,
    );
    expect(unchanged.url).toBe(receiver.url("/after"));

    const all = await svc("webhook", "update", "--id", hook.id, "--events", "all", "--json");
    expect(JSON.parse(all.stdout)).toEqual({ id: hook.id });
    const [everything] = (await listed()).filter(
      (webhook: { id: string }) => webhook.id === hook.id,
    );
    expect(everything.events.length).toBeGreaterThan(2);
    expect((await svc("webhook", "delete", "--id", hook.id)).code).toBe(0);
  });

  it("deletes a webhook, saying how many held deliveries it dropped", async () => {
    const hook = await createHook("/held", "spec.published");
    expect((await svc("webhook", "disable", "--id", hook.id)).code).toBe(0);
    await publishSpec();
    await publishSpec();
    await eventually(async () => {
      const counts = await unsentDeliveriesOf(p.db, { id: hook.id });
      return counts.held === 2 ? counts : null;
    });
    expect(await unsentDeliveriesOf(p.db, { id: hook.id })).toEqual({ due: 0, held: 2 });

    const res = await svc("webhook", "delete", "--id", hook.id);
    expect(res.stderr).toBe("");
    expect(res.stdout).toMatch(/deleted; dropped 0 due and 2 held deliveries/);
    expect((await listed()).map((webhook: { id: string }) => webhook.id)).not.toContain(hook.id);

    const again = await svc("webhook", "delete", "--id", hook.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/No webhook/);
  });

  it("reports due deliveries as JSON, and refuses a webhook of another organisation", async () => {
    receiver.respond("/due", { status: 500 });
    const hook = await createHook("/due", "spec.published");
    await publishSpec();
    await nextRequestOn("/due", 0);
    const counts = await eventually(async () => {
      const unsent = await unsentDeliveriesOf(p.db, { id: hook.id });
      return unsent.due === 1 ? unsent : null;
    });
    expect(counts).toEqual({ due: 1, held: 0 });
    const elsewhere = "0b6f4c2e-8f1a-4d55-9a1e-5c8f0d7e2a11";
    await expect(
      updateWebhook(
        p.db,
        { production: false },
        { id: hook.id, organizationId: elsewhere, events: ["all"] },
      ),
    ).rejects.toThrow(/No webhook/);
    const res = await svc("webhook", "delete", "--id", hook.id, "--json");
    expect(JSON.parse(res.stdout)).toEqual({ id: hook.id, droppedDeliveries: { due: 1, held: 0 } });
    expect(await listWebhooks(p.db, organizationId)).toEqual([]);
  });
});
