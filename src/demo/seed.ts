import { sql } from "drizzle-orm";
import { allScopes } from "../core/scopes.js";
import type { Db } from "../db/client.js";
import { importWorkspace } from "../import/service.js";
import { systemAudit } from "../modules/audit/service.js";
import { createToken } from "../modules/tokens/service.js";
import { generatePassword } from "../modules/users/passwords.js";
import { addUser, findOrganizationBySlug } from "../modules/users/service.js";
import { DEMO_ADMIN, DEMO_ORGANIZATION_SLUG, demoWorkspace } from "./workspace.js";

export type SeedResult =
  | { seeded: false }
  | {
      seeded: true;
      adminEmail: string;
      adminPassword: string;
      token: string;
      organizationSlug: string;
    };

// Arbitrary constant shared by every instance, so that concurrent seeders queue up.
const DEMO_SEED_LOCK_KEY = 727_465_102;

/** Creates the demo workspace once; later calls (or a concurrent loser) write nothing. */
export async function seedDemo(db: Db): Promise<SeedResult> {
  if ((await findOrganizationBySlug(db, DEMO_ORGANIZATION_SLUG)) !== null) return { seeded: false };
  const adminPassword = generatePassword();
  return db.transaction(async (tx): Promise<SeedResult> => {
    await tx.execute(sql`select pg_advisory_xact_lock(${DEMO_SEED_LOCK_KEY})`);
    if ((await findOrganizationBySlug(tx, DEMO_ORGANIZATION_SLUG)) !== null) {
      return { seeded: false };
    }
    const workspace = await importWorkspace(tx, demoWorkspace);
    // Set through addUser rather than the document: the import keeps the password of a user
    // who already exists, and the credentials shown must work either way.
    const admin = await addUser(tx, systemAudit, {
      orgSlug: DEMO_ORGANIZATION_SLUG,
      email: DEMO_ADMIN.email,
      name: DEMO_ADMIN.name,
      role: "admin",
      password: adminPassword,
    });
    const { token } = await createToken(tx, systemAudit, {
      organizationId: workspace.organization.id,
      userId: admin.id,
      scopes: [...allScopes],
      name: "demo",
    });
    return {
      seeded: true,
      adminEmail: admin.email,
      adminPassword,
      token,
      organizationSlug: DEMO_ORGANIZATION_SLUG,
    };
  });
}
