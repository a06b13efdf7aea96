import { parseScopeList } from "../../core/scopes.js";
import type { Db } from "../../db/client.js";
import { operatorAudit } from "../../modules/audit/service.js";
import { tokenNameSchema } from "../../modules/tokens/schemas.js";
import { createToken, revokeToken } from "../../modules/tokens/service.js";
import {
  findOrganizationBySlug,
  findUserByEmail,
  isCurrentMember,
} from "../../modules/users/service.js";
import {
  parseCommandArgs,
  parseDurationOption,
  parseOption,
  requireIdOption,
  requireOption,
} from "../args.js";
import { CliError, UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

async function activeMember(db: Db, orgSlug: string, email: string) {
  const refusal = new CliError(`${email} is not a member of an organization with slug ${orgSlug}`);
  const organization = await findOrganizationBySlug(db, orgSlug);
  const user = await findUserByEmail(db, email.trim());
  if (organization === null || user === null) throw refusal;
  if (!(await isCurrentMember(db, organization.id, user.id))) throw refusal;
  return { organizationId: organization.id, userId: user.id };
}

function parseScopes(value: string | undefined) {
  const { scopes, unknown } = parseScopeList(requireOption(value, "scopes"));
  if (unknown.length > 0) throw new UsageError(`Unknown scope: ${unknown.join(", ")}`);
  if (scopes.length === 0) throw new UsageError("--scopes needs at least one scope, or all");
  return scopes;
}

async function create(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    org: { type: "string" },
    user: { type: "string" },
    scopes: { type: "string" },
    "expires-in": { type: "string" },
    name: { type: "string" },
    json: { type: "boolean" },
  });
  const orgSlug = requireOption(values.org, "org");
  const email = requireOption(values.user, "user");
  const scopes = parseScopes(values.scopes);
  const name = parseOption(tokenNameSchema.optional(), values.name, "name");
  const expiresIn = values["expires-in"];
  const expiresAt =
    expiresIn === undefined
      ? null
      : new Date(Date.now() + parseDurationOption(expiresIn, "expires-in") * 1000);
  const created = await withDatabase(async (db) => {
    const member = await activeMember(db, orgSlug, email);
    return createToken(db, operatorAudit, { ...member, scopes, expiresAt, name: name || null });
  });
  if (values.json)
    return printJson({ id: created.id, token: created.token, scopes: created.scopes });
  printLine(`Token ${created.id} (shown once): ${created.token}`);
  printLine(`Scopes: ${created.scopes.join(" ")}`);
  if (created.expiresAt) printLine(`Expires: ${created.expiresAt.toISOString()}`);
}

async function revoke(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { id: { type: "string" } });
  const id = requireIdOption(values.id, "id", "a token");
  const revoked = await withDatabase((db) => revokeToken(db, operatorAudit, { tokenId: id }));
  if (!revoked) throw new CliError(`No live token with id ${id}`);
  printLine(`Token ${id} revoked.`);
}

export async function tokenCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "create") return create(rest);
  if (action === "revoke") return revoke(rest);
  throw new UsageError("token needs create or revoke");
}
