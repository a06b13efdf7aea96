import { z } from "zod";
import { InvalidRequest } from "../../core/errors.js";
import { parseInput } from "../../core/input.js";
import { writableSlug } from "../../core/values.js";
import type { Db } from "../../db/client.js";
import { memberships, organizations, users } from "../../db/schema/index.js";
import { type AuditContext, recordAudit } from "../audit/service.js";
import { generatePassword, hashPassword } from "../users/passwords.js";
import { emailSchema } from "../users/service.js";

// Slug and name as `svc import` accepts them, so both ways make the same organisations.
export const newOrganizationInput = z.object({
  slug: writableSlug,
  name: z.string().min(1),
  adminEmail: emailSchema,
  adminName: z.string().trim().min(1).optional(),
});
export type NewOrganizationInput = z.input<typeof newOrganizationInput>;

export type NewOrganization = {
  organization: { id: string; slug: string; name: string };
  adminEmail: string;
  /** Generated here and returned once: only its hash is stored. */
  adminPassword: string;
};

/**
 * Creates an organisation and its first admin, a new user with a generated password, in one
 * transaction. An existing email is refused rather than reused: its owner's password stays
 * theirs, and the one printed must be the one that signs in.
 */
export async function createOrganizationWithAdmin(
  db: Db,
  audit: AuditContext,
  input: NewOrganizationInput,
): Promise<NewOrganization> {
  const parsed = parseInput(newOrganizationInput, input);
  const adminPassword = generatePassword();
  // Hashing is slow on purpose; do it before the transaction holds any lock.
  const passwordHash = await hashPassword(adminPassword);
  return db.transaction(async (tx) => {
    const [organization] = await tx
      .insert(organizations)
      .values({ slug: parsed.slug, name: parsed.name })
      .onConflictDoNothing({ target: organizations.slug })
      .returning({ id: organizations.id, slug: organizations.slug, name: organizations.name });
    if (organization === undefined) {
      throw new InvalidRequest(`an organization with slug ${parsed.slug} already exists`);
    }
    // No conflict target: the only unique index a new random id can hit is lower(email).
    const [admin] = await tx
      .insert(users)
      .values({
        email: parsed.adminEmail,
        name: parsed.adminName ?? parsed.adminEmail.split("@")[0] ?? parsed.adminEmail,
        passwordHash,
      })
      .onConflictDoNothing()
      .returning({ id: users.id, email: users.email });
    if (admin === undefined) {
      throw new InvalidRequest(
        `a user with email ${parsed.adminEmail} already exists; add them with svc user add`,
      );
    }
    await tx
      .insert(memberships)
      .values({ organizationId: organization.id, userId: admin.id, role: "admin" });
    await recordAudit(tx, audit, {
      organizationId: organization.id,
      action: "member.added",
      target: { type: "member", id: admin.id, label: admin.email },
      detail: { role: "admin" },
    });
    return { organization, adminEmail: admin.email, adminPassword };
  });
}

/** Whether the database holds no organisation yet: a fresh production install. */
export async function hasNoOrganization(db: Db): Promise<boolean> {
  return (await db.$count(organizations)) === 0;
}
