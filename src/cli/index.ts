#!/usr/bin/env node
import { ConfigError } from "../config.js";
import { ApiError } from "../core/errors.js";
import { EmbeddedDatabaseBusy } from "../db/embedded-lock.js";
import { CliError } from "./cli-error.js";

const USAGE = `Usage: svc <command>

  start                       API and webhook worker in one process
  serve                       API only
  worker                      webhook worker only
  migrate                     apply pending database migrations
  embedded-template           prepare the initialised database a fresh embedded DATA_DIR starts from (npm run build does)
  demo [--json]               seed the demo workspace (idempotent)
  import FILE [--json]        import a workspace document in one transaction
  org create --slug S --name N --admin-email E [--admin-name N] [--json]   a new organisation and its first admin
  user add --org SLUG --email E --name N --role admin|member [--password P] [--json]
  user remove --org SLUG --email E
  token create --org SLUG --user EMAIL --scopes SCOPE,SCOPE,...|all [--expires-in DURATION] [--name N] [--json]
  token revoke --id ID
  transcript set --meeting ID --text-file F [--notes-file F] [--status S] [--json]
  oauth-client create --org SLUG --name NAME --redirect-uri URI [--redirect-uri URI ...] [--public] [--json]
  oauth-client update --client-id ID [--name NAME] [--redirect-uri URI ...]
  oauth-client rotate-secret --client-id ID [--json]
  oauth-client delete --client-id ID
  grant list --org SLUG [--json]
  grant revoke --id ID
  spec publish --org SLUG --project SLUG --spec SLUG --version V --value JSON [--json]
  component publish --org SLUG --project SLUG --component SLUG --version V --lifecycle-stage S --health ok|stale|under-rated|blocked [--json]
  webhook create --org SLUG --url URL --events TYPE,TYPE,...|all [--json]
  webhook list --org SLUG [--json]
  webhook update --id ID [--url URL] [--events TYPE,TYPE,...|all] [--json]
  webhook rotate-secret --id ID [--json]   new signing secret, shown once
  webhook delete --id ID [--json]          drops its due and held deliveries
  webhook enable|disable --id ID [--json]
  webhook deliveries --id ID [--json]
  webhook redeliver --delivery ID [--json]
  webhook retry-failed [--org SLUG] [--webhook ID] [--include-exhausted] [--json]   run the daily retry pass now
  audit list --org SLUG [--since ISO] [--action A] [--json]   the organisation's audit log, newest first
  retention run [--older-than DURATION] [--json]   remove settled deliveries and spent events now

Configuration comes from the environment (see docs/configuration.md).`;

type Command = (args: string[]) => Promise<void>;

// Each command's module is loaded when it runs, so a command loads only what it uses: `start`
// does not wait for the import, publishing and CLI output modules (nor keep them in its heap).
const commands: Record<string, () => Promise<Command>> = {
  start: async () => (await import("./commands/run.js")).startCommand,
  serve: async () => (await import("./commands/run.js")).serveCommand,
  worker: async () => (await import("./commands/run.js")).workerCommand,
  migrate: async () => (await import("./commands/database.js")).migrateCommand,
  "embedded-template": async () => (await import("./commands/database.js")).embeddedTemplateCommand,
  demo: async () => (await import("./commands/database.js")).demoCommand,
  import: async () => (await import("./commands/database.js")).importCommand,
  org: async () => (await import("./commands/organizations.js")).orgCommand,
  user: async () => (await import("./commands/users.js")).userCommand,
  token: async () => (await import("./commands/tokens.js")).tokenCommand,
  transcript: async () => (await import("./commands/transcripts.js")).transcriptCommand,
  "oauth-client": async () => (await import("./commands/oauth.js")).oauthClientCommand,
  grant: async () => (await import("./commands/oauth.js")).grantCommand,
  spec: async () => (await import("./commands/publish.js")).specCommand,
  component: async () => (await import("./commands/publish.js")).componentCommand,
  webhook: async () => (await import("./commands/webhooks.js")).webhookCommand,
  audit: async () => (await import("./commands/audit.js")).auditCommand,
  retention: async () => (await import("./commands/retention.js")).retentionCommand,
};

function refusalOf(error: unknown): { message: string; exitCode: number } | null {
  if (error instanceof CliError) return { message: error.message, exitCode: error.exitCode };
  if (
    error instanceof ApiError ||
    error instanceof ConfigError ||
    error instanceof EmbeddedDatabaseBusy
  ) {
    return { message: error.message, exitCode: 1 };
  }
  return null;
}

async function main(argv: string[]): Promise<void> {
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const loadCommand = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (loadCommand === undefined) {
    process.stderr.write(`Unknown command: ${name}\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const command = await loadCommand();
  await command(args);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const refusal = refusalOf(error);
  if (refusal === null) {
    process.stderr.write(
      `svc: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
    return;
  }
  process.stderr.write(`${refusal.message}\n`);
  if (refusal.exitCode === 2) process.stderr.write(`\n${USAGE}\n`);
  process.exitCode = refusal.exitCode;
});
