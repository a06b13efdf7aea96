import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidRequest } from "../../src/core/errors.js";
import type { Db } from "../../src/db/client.js";
import { assertRowReturned } from "../../src/db/returned-row.js";
import { memberships, organizations, users } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken } from "../../src/modules/tokens/service.js";
import { verifyPassword } from "../../src/modules/users/passwords.js";
import { addUser, removeMember } from "../../src/modules/users/service.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { livePrincipal } from "../support/tokens.js";

let testDatabase: TestDatabase;
let db: Db;
let organizationId: string;

beforeAll(async () => {
  testDatabase = await createTestDatabase();
  db = testDatabase.database.db;
  const [organization] = await db
    .insert(organizations)
    .values({ slug: "acme", name: "Acme" })
    .returning({ id: organizations.id });
  assertRowReturned(organization, "organization insert");
  organizationId = organization.id;
  await db.insert(organizations).values({ slug: "globex", name: "Globex" });
});
afterAll(() => testDatabase.drop());

async function storedUser(email: string) {
  const [user] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`);
  return user;
}

async function membership(userId: string) {
  const [row] = await db
    .select({ role: memberships.role, removedAt: memberships.removedAt })
    .from(memberships)
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)));
  return row;
}

describe("addUser", () => {
  it("creates a user and membership, normalises the email and hashes the password with Argon2id", async () => {
    const added = await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "  Ada@Acme.example ",
      name: "Ada",
      role: "admin",
      password: "a long passphrase",
    });
    expect(added).toEqual({
      id: expect.any(String),
      email: "ada@acme.example",
      name: "Ada",
      role: "admin",
    });
    const stored = await storedUser("ada@acme.example");
    expect(stored?.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect(await verifyPassword(stored?.passwordHash ?? "", "a long passphrase")).toBe(true);
    expect(await verifyPassword(stored?.passwordHash ?? "", "another passphrase")).toBe(false);
    expect(await membership(added.id)).toEqual({ role: "admin", removedAt: null });
  });

  it("reuses a user whose email differs only in case, adding a membership elsewhere", async () => {
    const first = await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "bo@acme.example",
      name: "Bo",
      role: "member",
    });
    const again = await addUser(db, systemAudit, {
      orgSlug: "globex",
      email: "BO@ACME.EXAMPLE",
      name: "Someone Else",
      role: "admin",
    });
    expect(again).toEqual({ id: first.id, email: "bo@acme.example", name: "Bo", role: "admin" });
    const count = await db
      .select({ id: users.id })
      .from(users)
      .where(sql`lower(${users.email}) = 'bo@acme.example'`);
    expect(count).toHaveLength(1);
    expect((await storedUser("bo@acme.example"))?.passwordHash).toBeNull();
  });

  it("finds a user stored with upper-case letters", async () => {
    const [legacy] = await db
      .insert(users)
      .values({ email: "Legacy@Acme.example", name: "Lee" })
      .returning({ id: users.id });
    const added = await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "legacy@acme.example",
      name: "Lee",
      role: "member",
    });
    expect(added).toMatchObject({ id: legacy?.id, email: "Legacy@Acme.example" });
  });

  it("changes an existing user's password only when one is given", async () => {
    await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "cy@acme.example",
      name: "Cy",
      role: "member",
      password: "first password",
    });
    await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "cy@acme.example",
      name: "Cy",
      role: "member",
    });
    const kept = await storedUser("cy@acme.example");
    expect(await verifyPassword(kept?.passwordHash ?? "", "first password")).toBe(true);
    await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "cy@acme.example",
      name: "Cy",
      role: "member",
      password: "second password",
    });
    const changed = await storedUser("cy@acme.example");
    expect(await verifyPassword(changed?.passwordHash ?? "", "second password")).toBe(true);
  });

  const badInputs: [string, Record<string, unknown>, string][] = [
    ["an unknown organisation", { orgSlug: "nowhere" }, "no organization with slug nowhere"],
    ["a malformed email", { email: "not-an-email" }, "email: must be an email address"],
    ["a blank name", { name: "   " }, "name: Too small"],
    [
      "an unknown role",
      { role: "owner" },
      'role: Invalid option: expected one of "admin"|"member"',
    ],
    ["a short password", { password: "short" }, "password: Too small"],
  ];
  it.each(badInputs)("refuses %s", async (_name, override, message) => {
    const input = {
      orgSlug: "acme",
      email: "dee@acme.example",
      name: "Dee",
      role: "member",
      ...override,
    };
    // @ts-expect-error: the refusals are for inputs the types would not allow either.
    const refusal = addUser(db, systemAudit, input);
    await expect(refusal).rejects.toBeInstanceOf(InvalidRequest);
    await expect(refusal).rejects.toThrow(message);
    expect(await storedUser("dee@acme.example")).toBeUndefined();
  });
});

describe("removeMember", () => {
  it("ends the membership, leaves the user's tokens without an author, even once re-added", async () => {
    const member = await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "eve@acme.example",
      name: "Eve",
      role: "admin",
    });
    const { token } = await createToken(db, systemAudit, {
      organizationId,
      userId: member.id,
      scopes: ["projects:read"],
    });
    expect((await livePrincipal(db, token))?.authorId).toBe(member.id);

    expect(
      await removeMember(db, systemAudit, { orgSlug: "acme", email: "EVE@acme.example" }),
    ).toEqual({
      id: member.id,
      email: "eve@acme.example",
    });
    expect((await membership(member.id))?.removedAt).toBeInstanceOf(Date);
    const principal = await livePrincipal(db, token);
    expect(principal).toMatchObject({ scopes: ["projects:read"], authorId: null });

    const readded = await addUser(db, systemAudit, {
      orgSlug: "acme",
      email: "eve@acme.example",
      name: "Eve",
      role: "member",
    });
    expect(readded.id).toBe(member.id);
    expect(await membership(member.id)).toEqual({ role: "member", removedAt: null });
    // Spec: "a new token must be minted"; the old one stays read-only.
    expect((await livePrincipal(db, token))?.authorId).toBeNull();
  });

  const refusals: [string, { orgSlug: string; email: string }, string][] = [
    [
      "an unknown organisation",
      { orgSlug: "nowhere", email: "ada@acme.example" },
      "no organization with slug nowhere",
    ],
    [
      "an unknown user",
      { orgSlug: "acme", email: "ghost@acme.example" },
      "no user with email ghost@acme.example",
    ],
    ["a malformed email", { orgSlug: "acme", email: "ghost" }, "email: must be an email address"],
  ];
  it.each(refusals)("refuses %s", async (_name, input, message) => {
    await expect(removeMember(db, systemAudit, input)).rejects.toThrow(new InvalidRequest(message));
  });

  it("refuses a user who is not an active member", async () => {
    await addUser(db, systemAudit, {
      orgSlug: "globex",
      email: "fay@globex.example",
      name: "Fay",
      role: "member",
    });
    await expect(
      removeMember(db, systemAudit, { orgSlug: "acme", email: "fay@globex.example" }),
    ).rejects.toThrow("fay@globex.example is not an active member of acme");
    await removeMember(db, systemAudit, { orgSlug: "globex", email: "fay@globex.example" });
    await expect(
      removeMember(db, systemAudit, { orgSlug: "globex", email: "fay@globex.example" }),
    ).rejects.toThrow(InvalidRequest);
  });
});
