import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { computeSignature } from "../../src/webhooks/verify.js";
import { launchBrowser } from "../support/browser.js";
import { ROOT } from "../support/cli.js";
import { freePort } from "../support/ports.js";
import { approve } from "./admin-in-browser.js";
import { type EmbeddedService, startEmbeddedService } from "./embedded-service.js";
import { WatchedProcess } from "./watched-process.js";

/**
 * examples/addon end to end, as its README says to run it: `npm run example:addon` against a
 * fresh embedded service, Chromium approving on the consent page as the demo admin.
 */

let service: EmbeddedService;
let browser: Browser;
let addonPort: number;
let dataDir: string;
let addon: WatchedProcess | undefined;

beforeAll(async () => {
  [service, browser, addonPort] = await Promise.all([
    startEmbeddedService(),
    launchBrowser(),
    freePort(),
  ]);
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-addon-"));
}, 90_000);

afterEach(async () => {
  await addon?.stop();
  addon = undefined;
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

function startAddon(): WatchedProcess {
  return WatchedProcess.start("the addon", "npm", ["run", "--silent", "example:addon"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      SERVICE_URL: service.url,
      SERVICE_ADMIN_EMAIL: service.adminEmail,
      SERVICE_ADMIN_PASSWORD: service.adminPassword,
      ADDON_PORT: String(addonPort),
      ADDON_DATA_DIR: dataDir,
    },
  });
}

async function stored<T>(file: string): Promise<T> {
  return JSON.parse(await readFile(path.join(dataDir, file), "utf8")) as T;
}

/** A delivery signed as the service signs it, sent straight to the addon's receiver. */
function deliver(secret: string, deliveryId: string, body: string, signature?: string) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return fetch(`http://127.0.0.1:${addonPort}/webhooks`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-service-event": "task.updated",
      "x-service-delivery": deliveryId,
      "x-service-timestamp": timestamp,
      "x-service-signature": signature ?? computeSignature(secret, timestamp, body),
    },
    body,
  });
}

describe("the sample addon", () => {
  it("registers, is approved in the browser, stores its token, calls the API and prints verified webhooks", async () => {
    addon = startAddon();
    const [, authorizationUrl] = await addon.waitFor(/Open this URL.*\n\s+(\S+)/);
    const query = new URL(authorizationUrl as string).searchParams;
    const callbackUrl = `http://127.0.0.1:${addonPort}/callback`;
    expect(query.get("redirect_uri")).toBe(callbackUrl);
    expect(query.get("code_challenge_method")).toBe("S256");
    expect(query.get("state")).toEqual(expect.any(String));

    const page = await (await browser.newContext()).newPage();
    const admin = {
      baseUrl: service.url,
      email: service.adminEmail,
      password: service.adminPassword,
    };
    await approve(page, admin, authorizationUrl as string, callbackUrl);
    await page.getByText("you can close this tab").waitFor();
    await page.context().close();

    const [, tokenFile, scopes] = await addon.waitFor(/Token stored in (\S+) \(scopes: ([^)]*)\)/);
    expect(tokenFile).toBe(path.join(dataDir, "token.json"));
    expect(scopes).toBe("projects:read tasks:read tasks:write webhooks:manage");
    const token = await stored<{ accessToken: string }>("token.json");
    expect(token.accessToken).toMatch(/^svc_live_/);
    const registration = await stored<{
      clientId: string;
      webhookId: string;
      webhookSecret: string;
    }>("registration.json");

    // The API through the typed client: /me (an OAuth token shows its addon) and the projects.
    await addon.waitFor(/^Connected to Demo Robotics \(demo\) as addon [0-9a-f-]{36}$/m);
    await addon.waitFor(/^Projects: .*\bpicker-arm\b/m);
    // Its own ping, delivered by the service and verified.
    await addon.waitFor(
      new RegExp(
        `^Webhook verified: change\\.created #\\d+ on webhook ${registration.webhookId} `,
        "m",
      ),
    );

    // A change made with the stored token reaches the receiver, verified.
    const created = await fetch(`${service.url}/api/v1/projects/picker-arm/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token.accessToken}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "Check the addon's webhook" }),
    });
    expect(created.status).toBe(200);
    const taskId = ((await created.json()) as { data: { id: string } }).data.id;
    await addon.waitFor(
      new RegExp(
        `^Webhook verified: task\\.created #\\d+ on task ${taskId} .*\\n.*"title":"Check the addon's webhook"`,
        "m",
      ),
    );

    // Unsigned, it is refused; signed and sent twice, it is printed once.
    const forged = await deliver(registration.webhookSecret, randomUUID(), "{}", "sha256=forged");
    expect(forged.status).toBe(400);
    await addon.waitFor(/^Webhook rejected: signature_mismatch$/m);
    const deliveryId = randomUUID();
    const event = JSON.stringify({
      id: 999_999,
      type: "task.updated",
      action: "updated",
      target_kind: "task",
      target_id: taskId,
      actor_id: "system",
      occurred_at: new Date().toISOString(),
      diff: { before: { status: "not_started" }, after: { status: "done" } },
    });
    expect((await deliver(registration.webhookSecret, deliveryId, event)).status).toBe(204);
    expect((await deliver(registration.webhookSecret, deliveryId, event)).status).toBe(204);
    await addon.waitFor(new RegExp(`delivery ${deliveryId}\\)\\n\\s+\\{"status":"done"\\}\\n`));
    expect(addon.stdout.split(`delivery ${deliveryId})`)).toHaveLength(2);
    expect(addon.stderr).toBe("");
  });

  it("on a second run, reuses the stored registration and token without asking again", async () => {
    addon = startAddon();
    await addon.waitFor(/^Using the token stored in /m);
    await addon.waitFor(/^Projects: .*\bpicker-arm\b/m);
    await addon.waitFor(/^Webhook verified: change\.created /m);
    expect(addon.stdout).not.toContain("Registered as");
    expect(addon.stdout).not.toContain("Open this URL");
  });
});

describe("the sample addon's code", () => {
  it("typechecks against the declarations of @workspace-service/client and verify-webhook", async () => {
    // `npm run typecheck` covers src and test; the example has a tsconfig of its own.
    const typescript = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const errors = await promisify(execFile)(
      process.execPath,
      [typescript, "-p", path.join(ROOT, "examples", "addon", "tsconfig.json")],
      { cwd: ROOT },
    ).then(
      () => "",
      (error: { stdout?: string }) => error.stdout || String(error),
    );
    expect(errors).toBe("");
  });
});
