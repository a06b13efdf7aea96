import { and, eq, isNull } from "drizzle-orm";
import type { PgInsertValue, PgTable } from "drizzle-orm/pg-core";
import { allScopes } from "../../src/core/scopes.js";
import type { Db } from "../../src/db/client.js";
import { apiTokens, oauthGrants } from "../../src/db/schema/index.js";
import { parseWorkspaceDocument } from "../../src/import/parse.js";
import { buildWorkspaceRows, workspaceTables } from "../../src/import/workspace-rows.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken } from "../../src/modules/tokens/service.js";
import { registerAddon } from "../../src/oauth/addons.js";
import { approveAuthorization } from "../../src/oauth/grants.js";
import { createPingDelivery, createWebhook } from "../../src/webhooks/service.js";
import type { TestApp } from "./app.js";
import { InjectSession } from "./browser.js";
import { importFixture, project, type Workspace } from "./fixtures.js";
import { redeemCode } from "./tokens.js";

const PASSWORD = "correct horse battery";

/**
 * Everything a project can hold, each title carrying `label`, so an answer shows whose data it
 * is. Every meeting has a transcript, minutes and notes: nothing a route reads is missing.
 */
export function projectContents(label: string, assignee: string, startsAt: readonly string[]) {
  return {
    specs: [
      {
        slug: "mass",
        name: `${label} mass`,
        kind: "budget",
        units: "kg",
        valueType: "number",
        versions: [
          { version: "1", status: "published", value: 12, publishedAt: "2026-01-05T10:00:00Z" },
          { version: "2", status: "draft", value: 14 },
        ],
      },
    ],
    components: [
      {
        slug: "chassis",
        name: `${label} chassis`,
        kind: "structure",
        dependsOn: ["spec:mass"],
        versions: [
          { version: "1", status: "released", lifecycleStage: "production", healthStatus: "ok" },
        ],
      },
    ],
    milestones: [
      { name: `${label} review`, kind: "gate", status: "planned", targetDate: "2026-06-01" },
    ],
    tasks: [
      { title: `${label} first task`, description: `${label} details`, assignee_email: assignee },
      { title: `${label} second task`, status: "blocked", blocked_reason: `${label} waits` },
    ],
    pages: [
      {
        title: `${label} handbook`,
        markdown: `# ${label}\n\nBody of ${label}.`,
        children: [{ title: `${label} appendix`, markdown: `${label} appendix body` }],
      },
    ],
    documents: [
      {
        category: "documentation",
        kind: "link",
        title: `${label} spec sheet`,
        url: "https://docs.example/sheet",
      },
      {
        category: "research",
        kind: "file",
        title: `${label} survey`,
        filename: "survey.pdf",
        byteSize: 2048,
        contentType: "application/pdf",
      },
    ],
    meetings: startsAt.map((at, index) => meeting(`${label} meeting ${index + 1}`, at, "org")),
  };
}

/** A meeting with minutes and a transcript with notes. */
export function meeting(title: string, startsAt: string, audience: "org" | "restricted") {
  return {
    title,
    startsAt,
    durationMinutes: 45,
    status: "held",
    locationType: "video",
    location: "https://meet.example/room",
    description: `${title} agenda`,
    audience,
    minutesMarkdown: `# ${title}\n\n- decided things`,
    transcript: { status: "ready", text: `${title}: verbatim words`, notes: `${title} summary` },
  };
}

function users(slug: string) {
  return [
    { email: `admin@${slug}.example`, name: `${slug} admin`, role: "admin", password: PASSWORD },
    { email: `member@${slug}.example`, name: `${slug} member`, role: "member" },
  ];
}

/**
 * An organisation shaped like every other one built here: a project `rover` (the slug every
 * such organisation shares), a project `<slug>-lab` of its own, a team-level library entry and
 * meeting; every title names the organisation.
 */
function mirroredDocument(slug: string) {
  const member = `member@${slug}.example`;
  return {
    organization: { slug, name: `Org ${slug}` },
    users: users(slug),
    documents: [
      {
        category: "documentation",
        kind: "link",
        title: `${slug} team handbook`,
        url: "https://docs.example/team",
      },
    ],
    meetings: [meeting(`${slug} all-hands`, "2026-03-02T09:00:00Z", "org")],
    projects: [
      project("rover", {
        description: `${slug} rover`,
        ...projectContents(`${slug} rover`, member, ["2026-03-03T09:00:00Z"]),
      }),
      project(`${slug}-lab`, projectContents(`${slug} lab`, member, ["2026-03-04T09:00:00Z"])),
    ],
  };
}

type Identified = { id: string };
type PageTree = Identified & { children: PageTree[] };

function pageIds(pages: readonly PageTree[]): string[] {
  return pages.flatMap((page) => [page.id, ...pageIds(page.children)]);
}

/** The ids of what the API addresses by id, by kind, from an import's echo. */
export function objectIdsOf(echo: Pick<Workspace, "projects" | "documents" | "meetings">) {
  const projects = echo.projects;
  return {
    page: projects.flatMap((p) => pageIds(p.pages)),
    task: projects.flatMap((p) => p.tasks.map((task) => task.id)),
    document: [...echo.documents, ...projects.flatMap((p) => p.documents)].map((d) => d.id),
    meeting: [...echo.meetings, ...projects.flatMap((p) => p.meetings)].map((m) => m.id),
  };
}

export type Tenant = {
  slug: string;
  workspace: Workspace;
  /** The admin's token, holding every scope. */
  token: string;
  /** Another token of the organisation, for the admin area to revoke. */
  spareTokenId: string;
  /** The admin, signed in to the browser pages, and a CSRF token of that session. */
  session: InjectSession;
  csrf: string;
  /** The ids of the organisation's objects, by kind (the API's, then the admin area's). */
  ids: ReturnType<typeof objectIdsOf> & {
    user: string[];
    organization: string[];
    token: string[];
    grant: string[];
    addon: string[];
    webhook: string[];
    delivery: string[];
  };
  /** The addon the organisation develops (a confidential OAuth client). */
  client: { id: string; clientId: string; clientSecret: string; redirectUri: string };
  /** Codes issued to that addon by the other organisation: one unused, one already redeemed. */
  codes: { unused: string; redeemed: string };
};

async function developAddon(t: TestApp, workspace: Workspace) {
  const redirectUri = `https://${workspace.organization.slug}.example/callback`;
  const addon = await registerAddon(t.db, systemAudit, {
    organizationId: workspace.organization.id,
    name: `${workspace.organization.slug} addon`,
    redirectUris: [redirectUri],
    isPublic: false,
  });
  if (addon.clientSecret === null) throw new Error("a confidential addon has a secret");
  return { id: addon.id, clientId: addon.clientId, clientSecret: addon.clientSecret, redirectUri };
}

/** The connecting organisation's admin approves the addon: a code, as the consent page gives. */
async function approve(t: TestApp, addon: Tenant["client"], connecting: Workspace) {
  const admin = connecting.users[0];
  if (admin === undefined) throw new Error("the organisation has no admin");
  const { code } = await approveAuthorization(t.db, systemAudit, {
    clientRecordId: addon.id,
    organizationId: connecting.organization.id,
    userId: admin.id,
    redirectUri: addon.redirectUri,
    scopes: ["projects:read"],
    codeChallenge: null,
    codeTtlSeconds: 600,
  });
  return code;
}

async function webhookWithDelivery(t: TestApp, workspace: Workspace) {
  const webhook = await createWebhook(
    t.db,
    systemAudit,
    { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 },
    {
      organizationId: workspace.organization.id,
      url: `http://127.0.0.1:9/${workspace.organization.slug}`,
      events: ["all"],
    },
  );
  const { deliveryId } = await createPingDelivery(t.db, {
    organizationId: workspace.organization.id,
    webhookId: webhook.id,
    actorId: null,
  });
  return { webhookId: webhook.id, deliveryId };
}

/**
 * Two organisations built alike (see `mirroredDocument`), each with tokens, a signed-in admin,
 * a webhook with a delivery and an addon that the other organisation has connected (so each
 * holds a grant, and codes of each addon exist, one of them redeemed).
 */
export async function mirroredTenants(t: TestApp, slugs: readonly [string, string]) {
  const [first, second] = await Promise.all(
    slugs.map(async (slug) => {
      const workspace = await importFixture(t.db, mirroredDocument(slug));
      const admin = workspace.users[0];
      if (admin === undefined) throw new Error("the organisation has no admin");
      const minted = await Promise.all(
        [0, 1].map(() =>
          createToken(t.db, systemAudit, {
            organizationId: workspace.organization.id,
            userId: admin.id,
            scopes: [...allScopes],
          }),
        ),
      );
      const session = new InjectSession(t.app);
      await session.signIn(`admin@${slug}.example`, PASSWORD);
      const csrf = await session.csrfTokenOf(`/admin/${slug}/tokens`);
      return {
        workspace,
        admin,
        minted,
        session,
        csrf,
        client: await developAddon(t, workspace),
        hook: await webhookWithDelivery(t, workspace),
      };
    }),
  );
  if (first === undefined || second === undefined) throw new Error("two organisations");
  const codesOf = async (developer: typeof first, connecting: typeof first) => {
    const unused = await approve(t, developer.client, connecting.workspace);
    const redeemed = await approve(t, developer.client, connecting.workspace);
    const response = await redeemCode(t.app, { code: redeemed, ...developer.client });
    if (response.statusCode !== 200) throw new Error(`redeeming failed: ${response.body}`);
    return { unused, redeemed };
  };
  const codes = [await codesOf(first, second), await codesOf(second, first)];
  return Promise.all(
    [first, second].map(async (built, index): Promise<Tenant> => {
      const organizationId = built.workspace.organization.id;
      const tokens = await t.db
        .select({ id: apiTokens.id })
        .from(apiTokens)
        .where(eq(apiTokens.organizationId, organizationId));
      const grants = await t.db
        .select({ id: oauthGrants.id })
        .from(oauthGrants)
        .where(and(eq(oauthGrants.organizationId, organizationId), isNull(oauthGrants.revokedAt)));
      const [main, spare] = built.minted;
      if (main === undefined || spare === undefined) throw new Error("two tokens were minted");
      return {
        slug: built.workspace.organization.slug,
        workspace: built.workspace,
        token: main.token,
        spareTokenId: spare.id,
        session: built.session,
        csrf: built.csrf,
        ids: {
          ...objectIdsOf(built.workspace),
          user: built.workspace.users.map((user) => user.id),
          organization: [organizationId],
          token: tokens.map((row) => row.id),
          grant: grants.map((row) => row.id),
          addon: [built.client.id],
          webhook: [built.hook.webhookId],
          delivery: [built.hook.deliveryId],
        },
        client: built.client,
        codes: codes[index] ?? { unused: "", redeemed: "" },
      };
    }),
  ) as Promise<[Tenant, Tenant]>;
}

async function insertRows<T extends PgTable>(db: Db, table: T, rows: PgInsertValue<T>[]) {
  if (rows.length > 0) await db.insert(table).values(rows);
}

/**
 * Rows for `document`'s projects, meetings and library inside an organisation that already
 * exists, built by the import's own code; `insert` writes them. The ids are known before the
 * rows exist, so the same requests can be sent before and after.
 */
export function rowsForExistingOrganization(
  workspace: Workspace,
  /** A workspace document without its organisation and users (`svc import`'s format). */
  document: Record<string, unknown>,
) {
  const parsed = parseWorkspaceDocument({
    organization: { slug: workspace.organization.slug, name: workspace.organization.name },
    users: workspace.users.map(({ email, name, role }) => ({ email, name, role })),
    ...document,
  });
  const built = buildWorkspaceRows(parsed, {
    organizationId: workspace.organization.id,
    userIdByEmail: new Map(workspace.users.map((user) => [user.email.toLowerCase(), user.id])),
    importedAt: new Date(),
  });
  return {
    ...built,
    async insert(t: TestApp) {
      await t.db.transaction(async (tx) => {
        for (const name of Object.keys(workspaceTables) as (keyof typeof workspaceTables)[]) {
          await insertRows(tx, workspaceTables[name], built.rows[name]);
        }
      });
    },
  };
}
