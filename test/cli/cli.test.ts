import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { organizations } from "../../src/db/schema/index.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { ROOT, runCli, runCliJson } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { workspaceDocument } from "../support/fixtures.js";
import { livePrincipal } from "../support/tokens.js";

let testDb: TestDatabase;
let env: Record<string, string>;
let dir: string;

async function writeJson(name: string, value: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify(value));
  return file;
}

beforeAll(async () => {
  testDb = await createTestDatabase();
  env = { DATABASE_URL: testDb.url };
  dir = await mkdtemp(path.join(tmpdir(), "svc-cli-"));
});
afterAll(() => testDb.drop());

/** `svc token create` for the `cli` organisation's admin, up to the scopes. */
const MINT_AS_CLI_ADMIN = [
  "token",
  "create",
  "--org",
  "cli",
  "--user",
  "admin@cli.example",
  "--scopes",
];

describe("svc import", () => {
  it("imports a document and prints it with ids", async () => {
    const file = await writeJson(
      "ok.json",
      workspaceDocument("cli", {
        projects: [{ slug: "p", name: "P", status: "active", visibility: "org" }],
      }),
    );
    const res = await runCli(["import", file, "--json"], env);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const printed = JSON.parse(res.stdout);
    expect(printed.organization).toMatchObject({ slug: "cli", id: expect.any(String) });
    expect(printed.projects[0].id).toEqual(expect.any(String));
  });

  it("refuses a bad file naming the JSON path, and writes nothing", async () => {
    const before = await testDb.database.db.$count(organizations);
    const file = await writeJson(
      "bad.json",
      workspaceDocument("broken", {
        projects: [{ slug: "p", name: "P", status: "active", visibility: "secret" }],
      }),
    );
    const res = await runCli(["import", file, "--json"], env);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe("");
    expect(res.stderr).toContain("projects[0].visibility");
    expect(await testDb.database.db.$count(organizations)).toBe(before);
  });

  it("refuses a file that is not JSON", async () => {
    const file = path.join(dir, "garbage.json");
    await writeFile(file, "{ nope");
    const res = await runCli(["import", file], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/not valid JSON/);
  });
});

describe("svc user and svc token", () => {
  it("adds a member, mints a token with the chosen scopes, and revokes it", async () => {
    const added = await runCli(
      [
        "user",
        "add",
        "--org",
        "cli",
        "--email",
        "New@Cli.example",
        "--name",
        "New",
        "--role",
        "member",
        "--json",
      ],
      env,
    );
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ email: "new@cli.example", role: "member" });

    const created = await runCli(
      [
        "token",
        "create",
        "--org",
        "cli",
        "--user",
        "new@cli.example",
        "--scopes",
        "tasks:read,pages:write",
        "--expires-in",
        "2h",
        "--json",
      ],
      env,
    );
    expect(created.code).toBe(0);
    const printed = JSON.parse(created.stdout);
    expect(Object.keys(printed).sort()).toEqual(["id", "scopes", "token"]);
    expect(printed.token).toMatch(/^svc_live_/);
    expect(printed.scopes).toEqual(["tasks:read", "pages:write"]);
    const principal = await livePrincipal(testDb.database.db, printed.token);
    expect(principal?.scopes).toEqual(["tasks:read", "pages:write"]);

    const revoked = await runCli(["token", "revoke", "--id", printed.id], env);
    expect(revoked.code).toBe(0);
    expect(await livePrincipal(testDb.database.db, printed.token)).toBeNull();
  });

  it("mints a token with every scope for `all`", async () => {
    const res = await runCli([...MINT_AS_CLI_ADMIN, "all", "--json"], env);
    expect(JSON.parse(res.stdout).scopes).toHaveLength(13);
  });

  it.each([
    [[...MINT_AS_CLI_ADMIN, "tasks:read,bogus"], /Unknown scope: bogus/],
    [[...MINT_AS_CLI_ADMIN, "all", "--expires-in", "soon"], /--expires-in/],
    [
      ["token", "create", "--org", "nowhere", "--user", "admin@cli.example", "--scopes", "all"],
      /not a member/,
    ],
    [
      [...MINT_AS_CLI_ADMIN, "all", "--name", "x".repeat(101)],
      /^--name may have at most 100 characters\n/,
    ],
    [
      ["user", "add", "--org", "cli", "--email", "x@cli.example", "--name", "X", "--role", "owner"],
      /^--role must be admin or member\n/,
    ],
    [["user", "remove", "--org", "cli", "--email", "ghost@cli.example"], /ghost@cli\.example/],
    [["token", "revoke", "--id", "00000000-0000-4000-8000-000000000000"], /No live token/],
    [["frobnicate"], /Unknown command/],
  ])("refuses %j with its reason on stderr", async (args, reason) => {
    const res = await runCli(args, env);
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe("");
    expect(res.stderr).toMatch(reason);
  });

  it("leaves a removed member's token read-only", async () => {
    const created = await runCli(
      [
        "token",
        "create",
        "--org",
        "cli",
        "--user",
        "member@cli.example",
        "--scopes",
        "all",
        "--json",
      ],
      env,
    );
    const { token } = JSON.parse(created.stdout);
    const removed = await runCli(
      ["user", "remove", "--org", "cli", "--email", "member@cli.example"],
      env,
    );
    expect(removed.code).toBe(0);
    const principal = await livePrincipal(testDb.database.db, token);
    expect(principal?.authorId).toBeNull();

    // Added back, the member needs a new token to write: the old one stays read-only.
    const readded = await runCli(
      [
        "user",
        "add",
        "--org",
        "cli",
        "--email",
        "member@cli.example",
        "--name",
        "Max",
        "--role",
        "member",
      ],
      env,
    );
    expect(readded.code).toBe(0);
    expect((await livePrincipal(testDb.database.db, token))?.authorId).toBeNull();
    const fresh = await runCliJson(
      [
        "token",
        "create",
        "--org",
        "cli",
        "--user",
        "member@cli.example",
        "--scopes",
        "all",
        "--json",
      ],
      env,
    );
    const renewed = await livePrincipal(testDb.database.db, fresh.token);
    expect(renewed?.authorId).toEqual(expect.any(String));
  });
});

describe("npm run --silent svc", () => {
  it("prints only the command's own output on stdout", async () => {
    const { spawnSync } = await import("node:child_process");
    const res = spawnSync(
      "npm",
      ["run", "--silent", "svc", "--", ...MINT_AS_CLI_ADMIN, "projects:read", "--json"],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: testDb.url,
          SECRET_KEY: TEST_SECRET_KEY,
          LOG_LEVEL: "warn",
        },
        encoding: "utf8",
      },
    );
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ token: expect.stringMatching(/^svc_live_/) });
  });
});

describe("configuration", () => {
  it("fails at start naming the bad variable", async () => {
    const res = await runCli(["migrate"], { ...env, PORT: "not-a-port" });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/PORT/);
  });
});
