import { and, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { InvalidRequest } from "../../core/errors.js";
import { parseInput } from "../../core/input.js";
import type { Db } from "../../db/client.js";
import { memberRole, memberships, organizations, sessions, users } from "../../db/schema/index.js";
import { type AuditContext, recordAudit } from "../audit/service.js";
import { hashPassword, passwordSchema } from "./passwords.js";

/** Stored trimmed and lower-cased: the unique index on lower(email) ignores case anyway. */
// Deliberately loose (one @, no spaces): internal hosts like admin@localhost are real addresses.
export const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[^\s@]+@[^\s@]+$/, "must be an email address");
export const memberRoleSchema = z.enum(memberRole.enumValues);
export type MemberRole = z.infer<typeof memberRoleSchema>;

const addUserInput = z.object({
  orgSlug: z.string(),
  email: emailSchema,
  name: z.string().trim().min(1),
  role: memberRoleSchema,
  password: passwordSchema.optional(),
});
export type AddUserInput = z.input<typeof addUserInput>;

const removeMemberInput = z.object({ orgSlug: z.string(), email: emailSchema });
export type RemoveMemberInput = z.input<typeof removeMemberInput>;

/** What callers may see of a member: never the password or its hash. */
export type Member = { id: string; email: string; name: string; role: MemberRole };

const userColumns = { id: users.id, email: users.email, name: users.name };
type UserRecord = { id: string; email: string; name: string };

export async function findOrganizationBySlug(db: Db, slug: string) {
  const [organization] = await db
    .select({ id: organizations.id, slug: organizations.slug, name: organizations.name })
    .from(organizations)
    .where(eq(organizations.slug, slug))
    .limit(1);
  return organization ?? null;
}

async function requireOrganization(db: Db, slug: string) {
  const organization = await findOrganizationBySlug(db, slug);
  if (organization === null) throw new InvalidRequest(`no organization with slug ${slug}`);
  return organization;
}

/** The condition of a user's current (not removed) membership of an organisation. */
function activeMembership(organizationId: string, userId: string) {
  return and(
    eq(memberships.organizationId, organizationId),
    eq(memberships.userId, userId),
    isNull(memberships.removedAt),
  );
}

export async function isCurrentMember(
  db: Db,
  organizationId: string,
  userId: string,
): Promise<boolean> {
  const [member] = await db
    .select({ id: memberships.id })
    .from(memberships)
    .where(activeMembership(organizationId, userId))
    .limit(1);
  return member !== undefined;
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRecord | null> {
  const [user] = await db
    .select(userColumns)
    .from(users)
    .where(sql`lower(${users.email}) = lower(${email})`)
    .limit(1);
  return user ?? null;
}

async function createOrReuseUser(
  db: Db,
  user: { email: string; name: string; passwordHash: string | null },
): Promise<UserRecord> {
  // No conflict target: the only unique index a new random id can hit is lower(email).
  const [created] = await db
    .insert(users)
    .values(user)
    .onConflictDoNothing()
    .returning(userColumns);
  if (created !== undefined) return created;
  const existing = await findUserByEmail(db, user.email);
  if (existing === null) throw new Error(`user ${user.email} conflicted but cannot be found`);
  if (user.passwordHash !== null) {
    await db
      .update(users)
      .set({ passwordHash: user.passwordHash })
      .where(eq(users.id, existing.id));
    await endBrowserSessionsOf(db, existing.id);
  }
  return existing;
}

/**
 * Signs the user out everywhere: a new password must lock out whoever knew the old one, and a
 * removed member must not keep an admin page open on a session from before.
 */
async function endBrowserSessionsOf(db: Db, userId: string): Promise<void> {
  await db.delete(sessions).where(sql`${sessions.data}->>'userId' = ${userId}`);
}

/**
 * Adds a user to an organisation: creates the user when the email is new, else reuses it
 * (changing its password only when one is given), and creates or re-activates the membership.
 */
export async function addUser(db: Db, audit: AuditContext, input: AddUserInput): Promise<Member> {
  const { orgSlug, email, name, role, password } = parseInput(addUserInput, input);
  // Hashing is slow on purpose; do it before the transaction holds any lock.
  const passwordHash = password === undefined ? null : await hashPassword(password);
  return db.transaction(async (tx) => {
    const organization = await requireOrganization(tx, orgSlug);
    const user = await createOrReuseUser(tx, { email, name, passwordHash });
    const [before] = await tx
      .select({ role: memberships.role, removedAt: memberships.removedAt })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organization.id), eq(memberships.userId, user.id)))
      .for("update");
    await tx
      .insert(memberships)
      .values({ organizationId: organization.id, userId: user.id, role })
      .onConflictDoUpdate({
        target: [memberships.organizationId, memberships.userId],
        // Re-activating a removed membership starts a new one; keeping a live one keeps its start.
        set: {
          role,
          removedAt: null,
          activeSince: sql`case when ${memberships.removedAt} is null then ${memberships.activeSince} else now() end`,
        },
      });
    const wasMember = before !== undefined && before.removedAt === null;
    if (!wasMember || before.role !== role) {
      await recordAudit(tx, audit, {
        organizationId: organization.id,
        action: wasMember ? "member.role_changed" : "member.added",
        target: { type: "member", id: user.id, label: user.email },
        detail: wasMember ? { role, previousRole: before.role } : { role },
      });
    }
    return { id: user.id, email: user.email, name: user.name, role };
  });
}

/**
 * Ends a user's active membership. The row stays so authorship still resolves; the user's
 * tokens keep reading but lose their author (see authenticateToken).
 */
export async function removeMember(
  db: Db,
  audit: AuditContext,
  input: RemoveMemberInput,
): Promise<{ id: string; email: string }> {
  const { orgSlug, email } = parseInput(removeMemberInput, input);
  const organization = await requireOrganization(db, orgSlug);
  const user = await findUserByEmail(db, email);
  if (user === null) throw new InvalidRequest(`no user with email ${email}`);
  return db.transaction(async (tx) => {
    const removed = await tx
      .update(memberships)
      .set({ removedAt: sql`now()` })
      .where(activeMembership(organization.id, user.id))
      .returning({ id: memberships.id, role: memberships.role });
    if (removed.length === 0) {
      throw new InvalidRequest(`${email} is not an active member of ${orgSlug}`);
    }
    await endBrowserSessionsOf(tx, user.id);
    await recordAudit(tx, audit, {
      organizationId: organization.id,
      action: "member.removed",
      target: { type: "member", id: user.id, label: user.email },
      detail: { role: removed[0]?.role },
    });
    return { id: user.id, email: user.email };
  });
}
