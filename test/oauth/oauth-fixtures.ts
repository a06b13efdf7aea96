import { createHash, randomBytes } from "node:crypto";
import type { Scope } from "../../src/core/scopes.js";
import type { Db } from "../../src/db/client.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { registerAddon } from "../../src/oauth/addons.js";
import { approveAuthorization } from "../../src/oauth/grants.js";
import { importFixture, type Workspace, workspaceDocument } from "../support/fixtures.js";

export const PASSWORD = "correct horse battery";

/** The organisation that connects addons ("acme": an admin and a member) and the developer's. */
export async function importOAuthWorkspaces(db: Db, suffix = "") {
  const users = (slug: string) => [
    { email: `admin@${slug}.example`, name: "Ada Admin", role: "admin", password: PASSWORD },
    { email: `member@${slug}.example`, name: "Max Member", role: "member", password: PASSWORD },
  ];
  const acme = await importFixture(
    db,
    workspaceDocument(`acme${suffix}`, {
      users: users(`acme${suffix}`),
      projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
    }),
  );
  const devco = await importFixture(
    db,
    workspaceDocument(`devco${suffix}`, { users: users(`devco${suffix}`) }),
  );
  return { acme, devco };
}

export function userOf(workspace: Workspace, index = 0) {
  const user = workspace.users?.[index];
  if (user === undefined) throw new Error(`fixture has no user ${index}`);
  return user;
}

export async function registerClient(
  db: Db,
  developer: Workspace,
  redirectUris: string[],
  options: { isPublic?: boolean; name?: string } = {},
) {
  const created = await registerAddon(db, systemAudit, {
    organizationId: developer.organization.id,
    name: options.name ?? "Gantt Addon",
    redirectUris,
    isPublic: options.isPublic ?? false,
  });
  return { ...created, redirectUri: redirectUris[0] as string };
}

export function pkcePair() {
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  return { verifier, challenge };
}

/** A code as the consent page's Approve issues it (same service call). */
export async function issueCode(
  db: Db,
  input: {
    clientRecordId: string;
    organization: Workspace;
    redirectUri: string;
    scopes: Scope[];
    codeChallenge?: string | null;
    ttlSeconds?: number;
  },
) {
  const { code } = await approveAuthorization(db, systemAudit, {
    clientRecordId: input.clientRecordId,
    organizationId: input.organization.organization.id,
    userId: userOf(input.organization).id,
    redirectUri: input.redirectUri,
    scopes: input.scopes,
    codeChallenge: input.codeChallenge ?? null,
    codeTtlSeconds: input.ttlSeconds ?? 600,
  });
  return code;
}

function unescapeHtml(text: string): string {
  return text
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}

/**
 * Where the page that sends a member back to the addon leads: its meta refresh, which its
 * "Continue to the addon" link repeats.
 */
export function addonReturnUrl(response: { statusCode: number; body: string }): URL {
  const refresh = /<meta http-equiv="refresh" content="0; url=([^"]+)">/.exec(response.body)?.[1];
  const link = /<a class="button" href="([^"]+)">Continue to the addon<\/a>/.exec(
    response.body,
  )?.[1];
  if (response.statusCode !== 200 || refresh === undefined || refresh !== link) {
    throw new Error(`not a page back to the addon (${response.statusCode}): ${response.body}`);
  }
  return new URL(unescapeHtml(refresh));
}

/** The member a consent page's form speaks for, as its hidden field says. */
export function memberIdOf(html: string): string {
  const id = /name="member_id" value="([^"]+)"/.exec(html)?.[1];
  if (id === undefined) throw new Error("the page has no member_id field");
  return id;
}
