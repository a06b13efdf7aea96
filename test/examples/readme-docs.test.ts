import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { ROOT } from "../support/cli.js";
import { TEST_DATABASE_URL, TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { type Admin, approve, registerAddon, registerWebhook } from "./admin-in-browser.js";
import { type EmbeddedService, startEmbeddedService } from "./embedded-service.js";
import { documentedJsonLines, fencedBlocks } from "./markdown-blocks.js";
import { ShellSession } from "./shell-session.js";

/**
 * The docs run as written: every fenced `sh` block of README.md and docs/, in order, in one shell
 * per topic, against a fresh embedded service started the way `npm start` does (Operations: a
 * fresh PostgreSQL database and Redis prefix). Where the text sends the reader to the browser
 * (the admin area, the consent page), Chromium does it, and the values the text says to copy are
 * set in the shell by hand, as the reader would. Each block is followed by a check of what it
 * printed, and the JSON it shows in its comments must be what it really printed.
 */

const TOPIC_FILES = {
  README: "README.md",
  "Build an addon": "docs/build-an-addon.md",
  Webhooks: "docs/webhooks.md",
  "The API": "docs/api.md",
  "The CLI": "docs/cli.md",
  "OAuth and the admin area": "docs/oauth-and-admin.md",
  Operations: "docs/production.md",
} as const;
type Topic = keyof typeof TOPIC_FILES;

/** Shell-like languages a reader would paste, which only `sh` blocks are run as. */
const UNRUN_SHELL_LANGUAGES = ["bash", "shell", "console", "zsh", "shell-session"];

function topic(heading: Topic): string {
  return readFileSync(path.join(ROOT, TOPIC_FILES[heading]), "utf8");
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
let binDir: string;

beforeAll(async () => {
  [service, browser, receiverPort] = await Promise.all([
    startEmbeddedService(),
    launchBrowser(),
    freePort(),
  ]);
  admin = { baseUrl: service.url, email: service.adminEmail, password: service.adminPassword };
  page = await (await browser.newContext()).newPage();
  // The reader's checkout, where `workspace-service/...` resolves to the package itself: here a
  // directory of its own with the package and the client package linked in, as
  // `npm install <path>` would.
  workDir = await mkdtemp(path.join(tmpdir(), "svc-readme-"));
  await mkdir(path.join(workDir, "node_modules", "@workspace-service"), { recursive: true });
  await symlink(ROOT, path.join(workDir, "node_modules", "workspace-service"), "dir");
  await symlink(
    path.join(ROOT, "packages", "client"),
    path.join(workDir, "node_modules", "@workspace-service", "client"),
    "dir",
  );
  // The package's `bin`, as `npm install` (or `npm link` in a checkout) puts it on the PATH.
  binDir = path.join(workDir, "node_modules", ".bin");
  await mkdir(binDir);
  await symlink(path.join(ROOT, "dist", "svc.mjs"), path.join(binDir, "svc"));
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
async function runSection(
  heading: Topic,
  checks: Check[],
  session: ShellSession = shell,
): Promise<void> {
  const blocks = fencedBlocks(topic(heading));
  expect(
    blocks.filter((block) => UNRUN_SHELL_LANGUAGES.includes(block.language)),
    "shell blocks in a language this test does not run",
  ).toEqual([]);
  const shellBlocks = blocks.filter((block) => block.language === "sh");
  expect(shellBlocks.length, `"${heading}": sh blocks, and checks in this test`).toBe(
    checks.length,
  );
  for (const [index, block] of shellBlocks.entries()) {
    let output: string;
    try {
      output = await session.run(block.code);
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

const run = promisify(execFile);

/** What the demo workspace holds now, read with the demo token. */
async function apiGet(url: string): Promise<unknown> {
  const response = await fetch(`${service.url}/api/v1${url}`, {
    headers: { authorization: `Bearer ${service.token}` },
  });
  expect(response.status, url).toBe(200);
  return ((await response.json()) as { data: unknown }).data;
}

async function demoTasksTitled(title: string): Promise<number> {
  const tasks = (await apiGet("/projects/picker-arm/tasks")) as Array<{ title: string }>;
  return tasks.filter((task) => task.title === title).length;
}

/** Every JSON value a block printed, pretty-printed or on one line, in order. */
function jsonDocuments(output: string): unknown[] {
  const documents: unknown[] = [];
  const lines = output.split("\n");
  for (let start = 0; start < lines.length; start += 1) {
    if (!/^[[{]/.test(lines[start] as string)) continue;
    for (let end = start; end < lines.length; end += 1) {
      try {
        documents.push(JSON.parse(lines.slice(start, end + 1).join("\n")));
        start = end;
        break;
      } catch {}
    }
  }
  return documents;
}

async function onServer<T>(action: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

/** A variable a block set in the reader's shell. */
async function shellValue(name: string): Promise<string> {
  return shell.run(`printf %s "$${name}"`);
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

    const scripts = fencedBlocks(topic("Build an addon")).filter(
      (block) => block.language === "ts",
    );
    expect(scripts).toHaveLength(1);
    await writeFile(path.join(workDir, "client.mts"), (scripts[0] as { code: string }).code);
    const { stdout } = await run(path.join(ROOT, "node_modules", ".bin", "tsx"), ["client.mts"], {
      cwd: workDir,
      env: { PATH: process.env.PATH ?? "", BASE: service.url, TOKEN: service.token },
    });
    expect(stdout).toContain("in_progress Redesign vacuum cup mount");
    expect(stdout).toMatch(/^404 not_found Project not found [\w-]+$/m);
    expect(await demoTasksTitled("Calibrate the wrist actuator")).toBe(1);
  });

  it("Webhooks: the receiver as written verifies a ping and a task, and refuses a forgery", async () => {
    const section = topic("Webhooks");
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

    await runSection("Webhooks", [
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

  it("The API: every example answers as documented, each write, idempotency and the 429 included", async () => {
    await runSection("The API", [
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
      async () => {
        const page = (await apiGet(`/pages/${await shellValue("PAGE_ID")}`)) as any;
        expect(page.title).toBe("Commissioning checklist");
        const tree = (await apiGet("/projects/picker-arm/pages")) as any[];
        expect(tree.find((item) => item.title === "Torque limits")?.parentId).toBe(page.id);
      },
      async () => {
        const documents = (await apiGet("/projects/picker-arm/documents")) as any[];
        const documentId = await shellValue("DOCUMENT_ID");
        expect(documents.find((document) => document.id === documentId)).toMatchObject({
          title: "Gripper datasheet, rev. C",
          description: "Revision C, March 2026",
        });
        const team = (await apiGet("/documents?category=research")) as any[];
        expect(team.map((document) => document.title)).toContain("Lab safety rules");
      },
      async () => {
        const tasks = (await apiGet("/projects/picker-arm/tasks")) as any[];
        expect(tasks.find((task) => task.title === "Order gripper samples")).toMatchObject({
          status: "blocked",
          priority: "high",
          targetDate: "2026-03-15",
          description: "Three of each cup size",
        });
      },
      async (output) => {
        expect(output).toContain('"notes":"Mount B approved. Ada orders the gripper samples."');
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

  it("README: the first call lists the projects and adds a task", async () => {
    await runSection("README", [
      async () => {
        expect(await demoTasksTitled("Check the vacuum pump")).toBe(1);
      },
    ]);
  });

  it("The CLI, then OAuth: a workspace imported, a member, a token, an addon and its grants", async () => {
    const session = ShellSession.start(await mkdtemp(path.join(workDir, "cli-")), {
      PATH: `${binDir}:${process.env.PATH ?? ""}`,
      HOME: process.env.HOME ?? "",
    });
    try {
      await runSection(
        "The CLI",
        [
          (output) => {
            const [imported, token, created] = jsonDocuments(output) as any[];
            expect(imported.organization.slug).toBe("acme");
            expect(imported.projects[0].tasks[0].id).toEqual(expect.any(String));
            expect(output).toMatch(/^grace@acme\.example is a member of acme/m);
            expect(token.token).toMatch(/^svc_live_/);
            expect(token.scopes).toEqual(["projects:read", "tasks:write"]);
            expect(created.organization.slug).toBe("beta");
            expect(created.adminEmail).toBe("lin@beta.example");
            expect(created.signInUrl).toMatch(/\/login$/);
          },
        ],
        session,
      );
      await runSection(
        "OAuth and the admin area",
        [
          (output) => {
            const [client] = jsonDocuments(output) as any[];
            expect(client.clientId).toMatch(/^svcc_/);
            expect(client.clientSecret).toMatch(/^svcs_/);
          },
          (output) => expect(jsonDocuments(output)).toEqual([[]]),
        ],
        session,
      );
    } finally {
      await session.close();
    }
  }, 240_000);

  it("Operations: migrate, the first admin, the API and the worker on PostgreSQL and Redis, then a clean stop", async () => {
    const database = `ws_test_${randomBytes(6).toString("hex")}`;
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${database}`;
    await onServer((client) => client.query(`create database ${database}`));
    const port = await freePort();
    const queuePrefix = `docs-${database}`;
    // The environment file the text shows, exported as its `set -a` line does.
    const session = ShellSession.start(await mkdtemp(path.join(workDir, "operations-")), {
      PATH: `${binDir}:${process.env.PATH ?? ""}`,
      HOME: process.env.HOME ?? "",
      NODE_ENV: "production",
      DATABASE_URL: url.toString(),
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      SECRET_KEY: randomBytes(32).toString("base64"),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      HOST: "127.0.0.1",
      PORT: String(port),
      MIGRATE_ON_START: "false",
    });
    try {
      await runSection(
        "Operations",
        [
          (output) => {
            expect(output).toMatch(/^Migrations applied\.$/m);
            const [created] = jsonDocuments(output) as any[];
            expect(created.organization.slug).toBe("acme");
            expect(created.adminEmail).toBe("ada@acme.example");
            expect(created.adminPassword).toEqual(expect.any(String));
            expect(created.signInUrl).toBe(`http://127.0.0.1:${port}/login`);
          },
          (output) => expect(output).toContain('"redis":"ok"'),
          (output) => {
            const [me] = jsonDocuments(output) as any[];
            expect(me.data.scopes).toHaveLength(13);
          },
          (output) => expect(output).toContain("both stopped cleanly"),
        ],
        session,
      );
    } finally {
      await session.close();
      await onServer((client) => client.query(`drop database if exists ${database} with (force)`));
      const redis = new Redis(TEST_REDIS_URL);
      const keys = await redis.keys(`${queuePrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    }
  }, 240_000);

  it("runs every sh block there is: each file that has one is a topic above", () => {
    const files = [
      "README.md",
      ...readdirSync(path.join(ROOT, "docs")).map((name) => `docs/${name}`),
    ]
      .filter((file) => file.endsWith(".md"))
      .filter((file) =>
        fencedBlocks(readFileSync(path.join(ROOT, file), "utf8")).some((block) =>
          ["sh", ...UNRUN_SHELL_LANGUAGES].includes(block.language),
        ),
      );
    expect(files.sort()).toEqual(Object.values(TOPIC_FILES).sort());
  });
});
