import { getTableColumns, inArray, sql } from "drizzle-orm";
import type { PgInsertValue, PgTable } from "drizzle-orm/pg-core";
import type { Db } from "../db/client.js";
import { memberships, organizations, users } from "../db/schema/index.js";
import { hashPassword } from "../modules/users/passwords.js";
import type { MemberRole } from "../modules/users/service.js";
import { ImportError } from "./import-error.js";
import { parseWorkspaceDocument } from "./parse.js";
import type { UserInput, WorkspaceDocument } from "./schema.js";
import {
  buildWorkspaceRows,
  type ImportedDocument,
  type ImportedMeeting,
  type ImportedProject,
  type WorkspaceRows,
  workspaceTables,
} from "./workspace-rows.js";

export { ImportError } from "./import-error.js";

type ImportedOrganization = { id: string; slug: string; name: string };
/** A member as echoed: the password given in the document never leaves. */
type ImportedUser = { id: string; email: string; name: string; role: MemberRole };

/** The imported document with an `id` on every object the import created. */
export type ImportedWorkspace = {
  organization: ImportedOrganization;
  users: ImportedUser[];
  documents: ImportedDocument[];
  meetings: ImportedMeeting[];
  projects: ImportedProject[];
};

// Postgres counts bind parameters in an Int16; a statement may carry no more than this.
const MAX_BIND_PARAMETERS = 65_535;

function rowsPerStatement(table: PgTable): number {
  const columnCount = Object.keys(getTableColumns(table)).length;
  return Math.max(1, Math.floor(MAX_BIND_PARAMETERS / columnCount));
}

async function inChunks<T>(
  rows: readonly T[],
  size: number,
  write: (chunk: T[]) => Promise<unknown>,
): Promise<void> {
  for (let start = 0; start < rows.length; start += size) {
    await write(rows.slice(start, start + size));
  }
}

function insertAll<T extends PgTable>(db: Db, table: T, rows: PgInsertValue<T>[]): Promise<void> {
  return inChunks(rows, rowsPerStatement(table), (chunk) => db.insert(table).values(chunk));
}

async function createOrganization(
  db: Db,
  organization: WorkspaceDocument["organization"],
): Promise<ImportedOrganization> {
  const [created] = await db
    .insert(organizations)
    .values(organization)
    .onConflictDoNothing({ target: organizations.slug })
    .returning({ id: organizations.id, slug: organizations.slug, name: organizations.name });
  if (created === undefined) {
    const message = `organization ${organization.slug} already exists`;
    throw new ImportError([{ path: ["organization", "slug"], message }]);
  }
  return created;
}

async function findUserIdsByEmail(db: Db, emails: readonly string[]): Promise<Map<string, string>> {
  const userIdByEmail = new Map<string, string>();
  await inChunks(emails, MAX_BIND_PARAMETERS, async (chunk) => {
    const found = await db
      .select({ id: users.id, email: users.email })
      .from(users)
      .where(inArray(sql`lower(${users.email})`, chunk));
    for (const user of found) userIdByEmail.set(user.email.toLowerCase(), user.id);
  });
  return userIdByEmail;
}

/** Creates the users that are new, reuses those whose email exists, and makes all members. */
async function addMembers(
  db: Db,
  organizationId: string,
  userInputs: readonly UserInput[],
  passwordHashes: readonly (string | null)[],
): Promise<ImportedUser[]> {
  const candidates = userInputs.map((user, index) => ({
    email: user.email,
    name: user.name,
    passwordHash: passwordHashes[index] ?? null,
  }));
  // No conflict target: the only unique index a new random id can hit is lower(email).
  await inChunks(candidates, rowsPerStatement(users), (chunk) =>
    db.insert(users).values(chunk).onConflictDoNothing(),
  );
  const emails = userInputs.map((user) => user.email.toLowerCase());
  const userIdByEmail = await findUserIdsByEmail(db, emails);
  const members = userInputs.map((user) => {
    const id = userIdByEmail.get(user.email.toLowerCase());
    if (id === undefined) throw new Error(`user ${user.email} was neither created nor found`);
    return { id, email: user.email, name: user.name, role: user.role };
  });
  await insertAll(
    db,
    memberships,
    members.map((member) => ({ organizationId, userId: member.id, role: member.role })),
  );
  return members;
}

/** In reference order: every row's parent is inserted by an earlier statement. */
async function insertWorkspaceRows(db: Db, rows: WorkspaceRows): Promise<void> {
  for (const name of Object.keys(workspaceTables) as (keyof WorkspaceRows)[]) {
    await insertAll(db, workspaceTables[name], rows[name]);
  }
}

/**
 * Imports a workspace document in one transaction: a new organisation with its members,
 * projects and everything in them. Records no change events: nothing here is an API write.
 */
export async function importWorkspace(db: Db, input: unknown): Promise<ImportedWorkspace> {
  const document = parseWorkspaceDocument(input);
  // Hashing is slow on purpose; do it before the transaction holds any lock.
  const passwordHashes = await Promise.all(
    document.users.map((user) =>
      user.password === undefined ? null : hashPassword(user.password),
    ),
  );
  const importedAt = new Date();
  return db.transaction(async (tx) => {
    const organization = await createOrganization(tx, document.organization);
    const members = await addMembers(tx, organization.id, document.users, passwordHashes);
    const workspace = buildWorkspaceRows(document, {
      organizationId: organization.id,
      userIdByEmail: new Map(members.map((member) => [member.email.toLowerCase(), member.id])),
      importedAt,
    });
    await insertWorkspaceRows(tx, workspace.rows);
    return {
      organization,
      users: members,
      documents: workspace.documents,
      meetings: workspace.meetings,
      projects: workspace.projects,
    };
  });
}
