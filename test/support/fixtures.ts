import { allScopes, type Scope } from "../../src/core/scopes.js";
import type { Db } from "../../src/db/client.js";
import { importWorkspace } from "../../src/import/service.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken } from "../../src/modules/tokens/service.js";
import { removeMember } from "../../src/modules/users/service.js";

type WorkspaceDocument = Parameters<typeof importWorkspace>[1];

/** A small organisation with an admin and a member; `extra` adds to the document. */
export function workspaceDocument(
  slug: string,
  extra: Record<string, unknown> = {},
): WorkspaceDocument {
  return {
    organization: { slug, name: `Org ${slug}` },
    users: [
      { email: `admin@${slug}.example`, name: "Ada Admin", role: "admin" },
      { email: `member@${slug}.example`, name: "Max Member", role: "member" },
    ],
    ...extra,
  };
}

/**
 * An active project visible to the whole organisation, named after its slug ("rover" → "Rover");
 * `extra` overrides those fields or adds specs, tasks, pages and the rest.
 */
export function project(slug: string, extra: Record<string, unknown> = {}) {
  return {
    slug,
    name: slug.charAt(0).toUpperCase() + slug.slice(1),
    status: "active",
    visibility: "org",
    ...extra,
  };
}

export type Workspace = Awaited<ReturnType<typeof importWorkspace>>;

/** Loads fixtures through the same code as `svc import`. */
export async function importFixture(db: Db, document: WorkspaceDocument): Promise<Workspace> {
  return importWorkspace(db, document);
}

/** Imports the organisation `slug` with its admin and member (see `workspaceDocument`). */
export function importOrganization(
  db: Db,
  slug: string,
  extra: Record<string, unknown> = {},
): Promise<Workspace> {
  return importFixture(db, workspaceDocument(slug, extra));
}

export async function mintToken(
  db: Db,
  workspace: Workspace,
  scopes: readonly Scope[] = allScopes,
  userIndex = 0,
): Promise<string> {
  const user = workspace.users?.[userIndex];
  if (user === undefined) throw new Error(`fixture has no user ${userIndex}`);
  const { token } = await createToken(db, systemAudit, {
    organizationId: workspace.organization.id,
    userId: user.id,
    scopes: [...scopes],
  });
  return token;
}

/**
 * Imports the organisation `slug` (see `workspaceDocument`) and mints a token for its member
 * (user 1), then removes the member: a token that still reads but has no author behind it.
 */
export async function formerMemberToken(
  db: Db,
  slug: string,
  extra: Record<string, unknown>,
  scopes: readonly Scope[],
): Promise<{ workspace: Workspace; token: string }> {
  const workspace = await importOrganization(db, slug, extra);
  const token = await mintToken(db, workspace, scopes, 1);
  await removeMember(db, systemAudit, { orgSlug: slug, email: `member@${slug}.example` });
  return { workspace, token };
}
