import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { ROOT } from "../support/cli.js";
import { eventually } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { type Admin, approve, registerAddon, registerWebhook } from "./admin-in-browser.js";
import { type EmbeddedService, startEmbeddedService } from "./embedded-service.js";
import { documentedJsonLines, fencedBlocks } from "./markdown-blocks.js";
import { ShellSession } from "./shell-session.js";

/**
 * The docs' "Build an addon", "Receive webhooks" and "Errors and limits" run as written: every
 * fenced `sh` block, in order, in one shell, against a fresh embedded service started the way
 * `npm start` does. Where the text sends the reader to the browser (the admin area, the consent
 * page), Chromium does it, and the values the text says to copy are set in the shell by hand, as
 * the reader would. Each block is followed by a check of what it printed, and the JSON it shows
 * in its comments must be what it really printed.
 */

const TOPIC_FILES = {
  "Build an addon": "build-an-addon.md",
  "Receive webhooks": "receive-webhooks.md",
  "Errors and limits": "errors-and-limits.md",
} as const;
type Topic = keyof typeof TOPIC_FILES;

function topic(heading: Topic): string {
  return readFileSync(path.join(ROOT, "docs", TOPIC_FILES[heading]), "utf8");
}
const REDIRECT_URI = "http://127.0.0.1:8080/callback";
const DOCUMENTED_RECEIVER_URL = "http://127.0.0.1:4000/webhooks";

type Check = (output: string) => void | Promise<void>;

let service: EmbeddedService;
let browser: Browser;
let page: Page;
let admin: Admin;
let shell: ShellSession;
let workDir: string;
let receiverPort: number;

beforeAll(async () => {
  [service, browser, receiverPort] = await Promise.all([
    startEmbeddedService(),
    launchBrowser(),
    freePort(),
  ]);
  admin = { baseUrl: service.url, email: service.adminEmail, password: service.adminPassword };
  page = await (await browser.newContext()).newPage();
  // The reader's checkout, where `workspace-service/...` resolves to the package itself: here a
  // directory of its own with the package linked in, as `npm install <path>` would.
  workDir = await mkdtemp(path.join(tmpdir(), "svc-readme-"));
  await mkdir(path.join(workDir, "node_modules"));
  await symlink(ROOT, path.join(workDir, "node_modules", "workspace-service"), "dir");
  shell = ShellSession.start(workDir, {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    // What the text asks the reader to set: the service root and the demo token it printed.
    BASE: service.url,
    TOKEN: service.token,
    // The receiver's port, 4000 unless set: a free one here.
    RECEIVER_PORT: String(receiverPort),
  });
}, 90_000);

afterAll(async () => {
  await shell?.close();
  await browser?.close();
  await service?.stop();
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

/**
 * Runs every `sh` block of the section in order, each followed by its check; fails when the
 * section has a block the test has no check for, or one in a language it would not run.
 */
async function runSection(heading: Topic, checks: Check[]): Promise<void> {
  const blocks = fencedBlocks(topic(heading));
  expect(
    blocks.filter((block) => !["sh", "js", "text"].includes(block.language)),
    "blocks in a language this test does not run",
  ).toEqual([]);
  const shellBlocks = blocks.filter((block) => block.language === "sh");
  expect(shellBlocks.length, `"${heading}": sh blocks, and checks in this test`).toBe(
    checks.length,
  );
  for (const [index, block] of shellBlocks.entries()) {
    let output: string;
    try {
      output = await shell.run(block.code);
    } catch (error) {
      throw new Error(`"${heading}", sh block ${index + 1} failed:\n${block.code}\n${error}`);
    }
    for (const documented of documentedJsonLines(block.code)) {
      expect(output, `"${heading}", block ${index + 1}, documented output`).toMatch(documented);
    }
    await (checks[index] as Check)(output);
  }
}

function jsonLines(output: string): unknown[] {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line.replace(/ \d{3}$/, "")));
}

function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function demoTasksTitled(title: string): Promise<number> {
  const response = await fetch(`${service.url}/api/v1/projects/picker-arm/tasks`, {
    headers: { authorization: `Bearer ${service.token}` },
  });
  const body = (await response.json()) as { data: Array<{ title: string }> };
  return body.data.filter((task) => task.title === title).length;
}

describe("docs that run", () => {
  it("Build an addon: registration, PKCE, consent, code exchange and an API call", async () => {
    expect(topic("Build an addon")).toContain(REDIRECT_URI);
    const registered = await registerAddon(page, admin, {
      org: "demo",
      name: "Curl addon",
      redirectUri: REDIRECT_URI,
    });
    shell.set({ CLIENT_ID: registered.clientId, CLIENT_SECRET: registered.clientSecret });

    await runSection("Build an addon", [
      async (output) => {
        const url = output.trim().split("\n").pop() ?? "";
        expect(url.startsWith(`${service.url}/oauth/authorize?`)).toBe(true);
        const query = new URL(url).searchParams;
        expect(query.get("code_challenge_method")).toBe("S256");
        expect(query.get("code_challenge")).toMatch(/^[\w-]{43}$/);
        expect(query.get("redirect_uri")).toBe(REDIRECT_URI);
        const callback = await approve(page, admin, url, REDIRECT_URI);
        expect(callback.searchParams.get("code")).toMatch(/^svca_/);
        expect(callback.searchParams.get("state")).toBe(query.get("state"));
        shell.set({ CALLBACK: callback.href });
      },
      (output) => expect(output).toContain("state matches"),
      (output) => {
        expect(jsonLines(output)).toEqual([
          {
            access_token: expect.stringMatching(/^svc_live_/),
            token_type: "Bearer",
            scope: "projects:read tasks:read",
          },
        ]);
      },
      (output) => {
        const [me, projects] = jsonLines(output) as any[];
        expect(me.data.organization.slug).toBe("demo");
        expect(me.data.scopes).toEqual(["projects:read", "tasks:read"]);
        expect(me.data.pluginId).toEqual(expect.any(String));
        expect(projects.data.map((project: { slug: string }) => project.slug)).toContain(
          "picker-arm",
        );
      },
    ]);
  });

  it("Receive webhooks: the receiver as written verifies a ping and a task, and refuses a forgery", async () => {
    const section = topic("Receive webhooks");
    expect(section).toContain(DOCUMENTED_RECEIVER_URL);
    const receivers = fencedBlocks(section).filter((block) => block.language === "js");
    expect(receivers).toHaveLength(1);
    await writeFile(path.join(workDir, "receiver.mjs"), (receivers[0] as { code: string }).code);
    const webhook = await registerWebhook(page, admin, {
      org: "demo",
      url: `http://127.0.0.1:${receiverPort}/webhooks`,
      events: ["change.created", "task.created"],
    });
    shell.set({ WEBHOOK_SECRET: webhook.secret, WEBHOOK_ID: webhook.webhookId });

    await runSection("Receive webhooks", [
      async () => {
        await eventually(() => portAnswers(receiverPort));
      },
      async (output) => {
        expect(output).toContain('{"ok":true,"data":{"status":"queued"}}');
        await shell.waitFor(/^change\.created #\d+ \{\}$/m);
        await shell.waitFor(/^task\.created #\d+ \{"title":"Calibrate the gripper",/m);
      },
      async (output) => {
        expect(output).toMatch(/^400$/m);
        await shell.waitFor(/^rejected: signature_mismatch$/m);
      },
      async () => {
        await eventually(async () => !(await portAnswers(receiverPort)));
      },
    ]);
  });

  it("Errors and limits: every example answers as documented, idempotency and the 429 included", async () => {
    await runSection("Errors and limits", [
      (output) => {
        expect(output).toMatch(/^HTTP\/1\.1 401 /m);
        for (const header of [
          "ratelimit-limit: 600",
          "ratelimit-remaining: ",
          "ratelimit-reset: ",
        ]) {
          expect(output).toContain(header);
        }
        expect(output).toMatch(/^www-authenticate: Bearer /m);
        expect(output).toMatch(/"error":"insufficient_scope".* 403$/m);
        expect(output).toMatch(/"error":"invalid_request","message":"title: .* 400$/m);
        expect(output).toMatch(/"error":"not_found".* 404$/m);
      },
      (output) => {
        expect(output).toMatch(/^\{"error":"invalid_grant",.* 400$/m);
        expect(output).toMatch(/^\{"error":"unsupported_grant_type",.* 400$/m);
      },
      async (output) => {
        const [first, replayed, reused] = jsonLines(output) as any[];
        expect(replayed).toEqual(first);
        expect(first.data.id).toEqual(expect.any(String));
        expect(output).toMatch(/^idempotent-replayed: true\r?$/m);
        expect(reused).toMatchObject({ ok: false, error: "invalid_request" });
        expect(await demoTasksTitled("Order spare grippers")).toBe(1);
      },
      (output) => {
        expect(output).toMatch(/^\s+\d+ 200\n\s+1 429$/m);
        expect(output).toMatch(/^HTTP\/1\.1 429 /m);
        expect(output).toMatch(/^retry-after: \d+\r?$/m);
        expect(output).toMatch(/"error":"rate_limited"/);
      },
    ]);
  });
});
