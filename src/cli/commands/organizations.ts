import { operatorAudit } from "../../modules/audit/service.js";
import {
  createOrganizationWithAdmin,
  newOrganizationInput,
} from "../../modules/organizations/service.js";
import { parseCommandArgs, parseOptions, requireOption } from "../args.js";
import { UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

async function create(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    slug: { type: "string" },
    name: { type: "string" },
    "admin-email": { type: "string" },
    "admin-name": { type: "string" },
    json: { type: "boolean" },
  });
  const input = parseOptions(
    newOrganizationInput,
    {
      slug: requireOption(values.slug, "slug"),
      name: requireOption(values.name, "name"),
      adminEmail: requireOption(values["admin-email"], "admin-email"),
      adminName: values["admin-name"],
    },
    { slug: "slug", name: "name", adminEmail: "admin-email", adminName: "admin-name" },
  );
  const { created, signInUrl } = await withDatabase(async (db, config) => ({
    created: await createOrganizationWithAdmin(db, operatorAudit, input),
    signInUrl: `${config.publicUrl}/login`,
  }));
  if (values.json) {
    return printJson({
      organization: created.organization,
      adminEmail: created.adminEmail,
      adminPassword: created.adminPassword,
      signInUrl,
    });
  }
  const { organization } = created;
  printLine(`Organization ${organization.slug} (${organization.name}) created: ${organization.id}`);
  printLine(`Its admin signs in at ${signInUrl}. The password is shown once, keep it:`);
  printLine(`  Email:     ${created.adminEmail}`);
  printLine(`  Password:  ${created.adminPassword}`);
}

export async function orgCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "create") return create(rest);
  throw new UsageError("org needs create");
}
