import { operatorAudit } from "../../modules/audit/service.js";
import { deleteAddon, registerAddon, rotateClientSecret, updateAddon } from "../../oauth/addons.js";
import { listGrantsConnectedTo, revokeGrant } from "../../oauth/grants.js";
import { parseCommandArgs, requireIdOption, requireOption } from "../args.js";
import { CliError, UsageError } from "../cli-error.js";
import { requireOrganizationId, withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

/** `svc oauth-client create`: registers an addon of the developer organisation. */
async function createClient(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    org: { type: "string" },
    name: { type: "string" },
    "redirect-uri": { type: "string", multiple: true },
    public: { type: "boolean" },
    json: { type: "boolean" },
  });
  const orgSlug = requireOption(values.org, "org");
  const name = requireOption(values.name, "name");
  const redirectUris = values["redirect-uri"] ?? [];
  if (redirectUris.length === 0)
    throw new UsageError("--redirect-uri is required (repeat it for several)");
  const isPublic = values.public ?? false;
  const created = await withDatabase(async (db) =>
    registerAddon(db, operatorAudit, {
      organizationId: await requireOrganizationId(db, orgSlug),
      name,
      redirectUris,
      isPublic,
    }),
  );
  if (values.json) {
    return printJson(
      created.clientSecret === null
        ? { clientId: created.clientId }
        : { clientId: created.clientId, clientSecret: created.clientSecret },
    );
  }
  printLine(`OAuth client ${created.clientId} registered for ${orgSlug}.`);
  if (created.clientSecret === null) {
    printLine("Public client: no secret; it must use PKCE (S256).");
  } else {
    printLine(`Client secret (shown once): ${created.clientSecret}`);
  }
}

function noSuchClient(clientId: string): CliError {
  return new CliError(`No OAuth client with id ${clientId}`);
}

/** `svc oauth-client update`: renames an addon and/or replaces its redirect URIs. */
async function updateClient(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    "client-id": { type: "string" },
    name: { type: "string" },
    "redirect-uri": { type: "string", multiple: true },
  });
  const clientId = requireOption(values["client-id"], "client-id");
  const redirectUris = values["redirect-uri"];
  if (values.name === undefined && redirectUris === undefined) {
    throw new UsageError("give --name and/or --redirect-uri (repeat it for several)");
  }
  const updated = await withDatabase((db) =>
    updateAddon(db, { clientId }, { name: values.name, redirectUris }),
  );
  if (!updated) throw noSuchClient(clientId);
  printLine(`OAuth client ${clientId} updated.`);
}

/** `svc oauth-client rotate-secret`: a new secret, shown once; the old one is refused at once. */
async function rotateSecret(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    "client-id": { type: "string" },
    json: { type: "boolean" },
  });
  const clientId = requireOption(values["client-id"], "client-id");
  const rotated = await withDatabase((db) => rotateClientSecret(db, operatorAudit, { clientId }));
  if (rotated === null) throw noSuchClient(clientId);
  if (values.json) return printJson(rotated);
  printLine(`OAuth client ${clientId}: the old secret is refused from now on.`);
  printLine(`New client secret (shown once): ${rotated.clientSecret}`);
}

/** `svc oauth-client delete`: the addon, its grants and every token they issued go at once. */
async function deleteClient(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { "client-id": { type: "string" } });
  const clientId = requireOption(values["client-id"], "client-id");
  const deleted = await withDatabase((db) => deleteAddon(db, { clientId }));
  if (!deleted) throw noSuchClient(clientId);
  printLine(
    `OAuth client ${clientId} deleted; every grant and token it held is refused from now on.`,
  );
}

export async function oauthClientCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "create") return createClient(rest);
  if (action === "update") return updateClient(rest);
  if (action === "rotate-secret") return rotateSecret(rest);
  if (action === "delete") return deleteClient(rest);
  throw new UsageError("oauth-client needs create, update, rotate-secret or delete");
}

/** `svc grant list`: the addons connected to an organisation. */
async function listGrants(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { org: { type: "string" }, json: { type: "boolean" } });
  const orgSlug = requireOption(values.org, "org");
  const grants = await withDatabase(async (db) =>
    listGrantsConnectedTo(db, await requireOrganizationId(db, orgSlug)),
  );
  // `clientName` is the addon's name under the key the JSON output has always used.
  const printed = grants.map((grant) => ({
    id: grant.id,
    clientId: grant.clientId,
    clientName: grant.addonName,
    scopes: grant.scopes,
    createdAt: grant.createdAt.toISOString(),
    revokedAt: grant.revokedAt?.toISOString() ?? null,
  }));
  if (values.json) return printJson(printed);
  if (printed.length === 0) return printLine(`No addon is connected to ${orgSlug}.`);
  for (const grant of printed) {
    const status = grant.revokedAt === null ? "live" : `revoked ${grant.revokedAt}`;
    printLine(
      `${grant.id}  ${grant.clientName} (${grant.clientId})  ${grant.scopes.join(" ")}  ${status}`,
    );
  }
}

/** `svc grant revoke`: the grant and every token it issued stop working at once. */
async function revoke(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { id: { type: "string" } });
  const id = requireIdOption(values.id, "id", "a grant");
  const revoked = await withDatabase((db) => revokeGrant(db, operatorAudit, id));
  if (!revoked) throw new CliError(`No live grant with id ${id}`);
  printLine(`Grant ${id} revoked; every token it issued is refused from now on.`);
}

export async function grantCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "list") return listGrants(rest);
  if (action === "revoke") return revoke(rest);
  throw new UsageError("grant needs list or revoke");
}
