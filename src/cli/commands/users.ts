import { operatorAudit } from "../../modules/audit/service.js";
import {
  addUser,
  type MemberRole,
  memberRoleSchema,
  removeMember,
} from "../../modules/users/service.js";
import { parseCommandArgs, requireOption } from "../args.js";
import { UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

function parseRole(value: string | undefined): MemberRole {
  const role = memberRoleSchema.safeParse(requireOption(value, "role"));
  if (!role.success) {
    throw new UsageError(`--role must be ${memberRoleSchema.options.join(" or ")}`);
  }
  return role.data;
}

async function add(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    org: { type: "string" },
    email: { type: "string" },
    name: { type: "string" },
    role: { type: "string" },
    password: { type: "string" },
    json: { type: "boolean" },
  });
  const input = {
    orgSlug: requireOption(values.org, "org"),
    email: requireOption(values.email, "email"),
    name: requireOption(values.name, "name"),
    role: parseRole(values.role),
    password: values.password,
  };
  const user = await withDatabase((db) => addUser(db, operatorAudit, input));
  if (values.json) return printJson(user);
  printLine(
    `${user.email} is ${user.role === "admin" ? "an admin" : "a member"} of ${input.orgSlug} (user ${user.id}).`,
  );
}

async function remove(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { org: { type: "string" }, email: { type: "string" } });
  const input = {
    orgSlug: requireOption(values.org, "org"),
    email: requireOption(values.email, "email"),
  };
  await withDatabase((db) => removeMember(db, operatorAudit, input));
  printLine(
    `${input.email} is no longer a member of ${input.orgSlug}; their tokens can only read now.`,
  );
}

export async function userCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "add") return add(rest);
  if (action === "remove") return remove(rest);
  throw new UsageError("user needs add or remove");
}
