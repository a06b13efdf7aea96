import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberships, organizations, users } from "../../src/db/schema/index.js";
import { verifyPassword } from "../../src/modules/users/passwords.js";
import { startService } from "../faults/service-process.js";
import { runCli, runCliJson } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";

let testDb: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  testDb = await createTestDatabase();
  env = { DATABASE_URL: testDb.url, PUBLIC_URL: "https://workspace.example.com" };
});
afterAll(() => testDb.drop());

/** What `svc serve` prints up to the end of its greeting's last line. */
async function greeting(databaseUrl: string): Promise<string> {
  const service = await startService("serve", {
    DATABASE_URL: databaseUrl,
    REDIS_URL: TEST_REDIS_URL,
  });
  try {
    await expect
      .poll(() => service.output(), { timeout: 10_000 })
      .toMatch(/ --(admin-email|scopes) .*\n/);
    return service.output();
  } finally {
    await service.kill();
  }
}

const organizationCount = () => testDb.database.db.$count(organizations);
const userCount = () => testDb.database.db.$count(users);

describe("svc org create", () => {
  it("is what the greeting names on a database with no organisation", async () => {
    const empty = await createTestDatabase();
    try {
      const output = await greeting(empty.url);
      expect(output).toContain("No organization yet");
      expect(output).toContain(
        "svc -- org create --slug <slug> --name <name> --admin-email <email>",
      );
      expect(output).not.toContain("token create");
    } finally {
      await empty.drop();
    }
  });

  it("creates the organisation and its admin, and prints exactly the documented JSON", async () => {
    const printed = await runCliJson(
      [
        "org",
        "create",
        "--slug",
        "acme",
        "--name",
        "Acme Robotics",
        "--admin-email",
        "Ada@Acme.example",
        "--admin-name",
        "Ada",
        "--json",
      ],
      env,
    );
    expect(Object.keys(printed)).toEqual([
      "organization",
      "adminEmail",
      "adminPassword",
      "signInUrl",
    ]);
    expect(Object.keys(printed.organization)).toEqual(["id", "slug", "name"]);
    expect(printed.organization).toMatchObject({ slug: "acme", name: "Acme Robotics" });
    expect(printed.adminEmail).toBe("ada@acme.example");
    expect(printed.adminPassword).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(printed.signInUrl).toBe("https://workspace.example.com/login");

    const db = testDb.database.db;
    const [admin] = await db
      .select({ id: users.id, name: users.name, passwordHash: users.passwordHash })
      .from(users)
      .where(eq(users.email, "ada@acme.example"));
    expect(admin?.name).toBe("Ada");
    expect(await verifyPassword(admin?.passwordHash ?? "", printed.adminPassword)).toBe(true);
    const [membership] = await db
      .select({ role: memberships.role, organizationId: memberships.organizationId })
      .from(memberships)
      .where(eq(memberships.userId, admin?.id ?? ""));
    expect(membership).toEqual({ role: "admin", organizationId: printed.organization.id });
  });

  it("prints the password once in words, naming the admin after the email without --admin-name", async () => {
    const res = await runCli(
      ["org", "create", "--slug", "beta", "--name", "Beta", "--admin-email", "grace@beta.example"],
      env,
    );
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Organization beta \(Beta\) created: [0-9a-f-]{36}$/m);
    expect(res.stdout).toContain("signs in at https://workspace.example.com/login");
    expect(res.stdout).toMatch(/^ {2}Email: +grace@beta\.example$/m);
    expect(res.stdout).toMatch(/^ {2}Password: +[A-Za-z0-9_-]{16}$/m);
    const [grace] = await testDb.database.db
      .select({ name: users.name })
      .from(users)
      .where(eq(users.email, "grace@beta.example"));
    expect(grace?.name).toBe("grace");
  });

  it("refuses an existing slug or email, and writes nothing", async () => {
    const [orgsBefore, usersBefore] = [await organizationCount(), await userCount()];
    const takenSlug = await runCli(
      ["org", "create", "--slug", "acme", "--name", "Other", "--admin-email", "new@x.example"],
      env,
    );
    expect(takenSlug.code).toBe(1);
    expect(takenSlug.stderr).toContain("an organization with slug acme already exists");
    const takenEmail = await runCli(
      ["org", "create", "--slug", "gamma", "--name", "G", "--admin-email", "ADA@acme.example"],
      env,
    );
    expect(takenEmail.code).toBe(1);
    expect(takenEmail.stderr).toContain("a user with email ada@acme.example already exists");
    // The organisation inserted before the email conflicted was rolled back with it.
    expect(await organizationCount()).toBe(orgsBefore);
    expect(await userCount()).toBe(usersBefore);
  });

  it("refuses bad input naming the flag, as a usage error", async () => {
    const cases: [string[], string][] = [
      [["--name", "N", "--admin-email", "a@b"], "--slug is required"],
      [["--slug", "s", "--admin-email", "a@b"], "--name is required"],
      [["--slug", "s", "--name", "N"], "--admin-email is required"],
      [["--slug", "a b", "--name", "N", "--admin-email", "a@b"], "--slug must be letters"],
      [["--slug", "s", "--name", "N", "--admin-email", "nobody"], "--admin-email must be an email"],
      [["--slug", "s", "--name", "N", "--admin-email", "a@b", "--admin-name", " "], "--admin-name"],
      [["--slug", "s", "--name", "N", "--admin-email", "a@b", "--role", "x"], "Unknown option"],
    ];
    const orgsBefore = await organizationCount();
    for (const [flags, message] of cases) {
      const res = await runCli(["org", "create", ...flags], env);
      expect(res.code, flags.join(" ")).toBe(2);
      expect(res.stderr).toContain(message);
    }
    const noAction = await runCli(["org"], env);
    expect(noAction.code).toBe(2);
    expect(noAction.stderr).toContain("org needs create");
    expect(await organizationCount()).toBe(orgsBefore);
  });

  it("leaves the greeting to minting a token once an organisation exists", async () => {
    const output = await greeting(testDb.url);
    expect(output).toContain("svc -- token create --org <slug>");
    expect(output).not.toContain("org create");
  });
});
