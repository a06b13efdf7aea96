/**
 * A sample addon for workspace-service, from registration to webhooks (see README.md here).
 * Run it with `npm run example:addon` while `npm start` serves the embedded workspace.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ApiError, createWorkspaceClient } from "@workspace-service/client";
import { type ChangeEvent, startAddonServer } from "./addon-server.js";
import { AdminSession } from "./admin-forms.js";
import {
  type AuthorizationServer,
  codeFromCallback,
  discover,
  exchangeCode,
  startAuthorization,
} from "./oauth.js";
import { AddonStore, type Registration, type StoredToken } from "./store.js";

const ADDON_NAME = "Sample addon";
// Read the workspace, write tasks, and ping our own webhook.
const SCOPES = "projects:read tasks:read tasks:write webhooks:manage";
const WEBHOOK_EVENTS = ["change.created", "task.created", "task.updated", "page.created"];

const settings = {
  serviceUrl: (process.env.SERVICE_URL ?? "http://127.0.0.1:3000").replace(/\/+$/, ""),
  org: process.env.SERVICE_ORG ?? "demo",
  adminEmail: process.env.SERVICE_ADMIN_EMAIL ?? "admin@demo.example",
  adminPassword: process.env.SERVICE_ADMIN_PASSWORD,
  port: Number(process.env.ADDON_PORT ?? 4100),
  dataDir: path.resolve(
    process.env.ADDON_DATA_DIR ?? path.join(path.dirname(fileURLToPath(import.meta.url)), ".data"),
  ),
};
const addonUrl = `http://127.0.0.1:${settings.port}`;
const apiBase = `${settings.serviceUrl}/api/v1`;
const store = new AddonStore(settings.dataDir);

/** The client and webhook registered earlier for this service and port, or new ones. */
async function registration(): Promise<Registration> {
  const stored = await store.loadRegistration();
  const redirectUri = `${addonUrl}/callback`;
  if (stored?.serviceUrl === settings.serviceUrl && stored.redirectUri === redirectUri) {
    return stored;
  }
  if (settings.adminPassword === undefined) {
    throw new Error(
      "Set SERVICE_ADMIN_PASSWORD to the admin login `npm start` printed: the addon registers itself through the admin area once.",
    );
  }
  const admin = new AdminSession(settings.serviceUrl);
  await admin.signIn(settings.adminEmail, settings.adminPassword);
  const client = await admin.registerAddon(settings.org, ADDON_NAME, redirectUri);
  const webhookUrl = `${addonUrl}/webhooks`;
  const webhook = await admin.registerWebhook(settings.org, webhookUrl, WEBHOOK_EVENTS);
  const registered = {
    serviceUrl: settings.serviceUrl,
    redirectUri,
    webhookUrl,
    ...client,
    ...webhook,
  };
  await store.saveRegistration(registered);
  console.log(`Registered as OAuth client ${client.clientId}, webhook ${webhook.webhookId}`);
  return registered;
}

/** The admin approves in the browser; the code comes back to our callback. */
async function authorize(
  server: AuthorizationServer,
  client: Registration,
  nextCallback: () => Promise<URLSearchParams>,
): Promise<StoredToken> {
  const pending = startAuthorization(server, client, SCOPES);
  console.log(`Open this URL in a browser and approve as an admin:\n  ${pending.url}`);
  const code = codeFromCallback(server, pending, await nextCallback());
  const issued = await exchangeCode(server, client, pending, code);
  const token = {
    serviceUrl: settings.serviceUrl,
    clientId: client.clientId,
    accessToken: issued.access_token,
    scope: issued.scope,
    obtainedAt: new Date().toISOString(),
  };
  await store.saveToken(token);
  console.log(`Token stored in ${store.tokenFile} (scopes: ${token.scope})`);
  return token;
}

/** The token stored by an earlier run, while it still works. */
async function storedToken(client: Registration): Promise<string | undefined> {
  const stored = await store.loadToken();
  if (stored === null || stored.clientId !== client.clientId) return undefined;
  try {
    await createWorkspaceClient({ baseUrl: apiBase, token: stored.accessToken }).get("/me");
  } catch (error) {
    // 401: the grant was revoked (or the service started over), so ask for a new approval.
    if (error instanceof ApiError && error.status === 401) return undefined;
    throw error;
  }
  console.log(`Using the token stored in ${store.tokenFile}`);
  return stored.accessToken;
}

function printEvent(event: ChangeEvent, deliveryId: string) {
  console.log(
    `Webhook verified: ${event.type} #${event.id} on ${event.target_kind} ${event.target_id} (delivery ${deliveryId})`,
  );
  if (Object.keys(event.diff.after).length > 0) {
    console.log(`  ${JSON.stringify(event.diff.after)}`);
  }
}

async function main() {
  const client = await registration();
  const server = await startAddonServer({
    port: settings.port,
    webhookSecret: client.webhookSecret,
    onEvent: printEvent,
    onRejected: (reason) => console.log(`Webhook rejected: ${reason}`),
  });
  const stop = async () => {
    await server.close();
    process.exit(0);
  };
  process.once("SIGINT", stop).once("SIGTERM", stop);
  console.log(`Listening on ${addonUrl} (callback /callback, webhooks /webhooks)`);

  const accessToken =
    (await storedToken(client)) ??
    (await authorize(await discover(settings.serviceUrl), client, server.nextCallback)).accessToken;
  const api = createWorkspaceClient({ baseUrl: apiBase, token: accessToken });

  const me = await api.get("/me");
  console.log(
    `Connected to ${me.organization.name} (${me.organization.slug}) as addon ${me.pluginId}`,
  );
  const projects = await api.get("/projects");
  console.log(`Projects: ${projects.map((project) => project.slug).join(", ")}`);

  await api.post("/webhooks/ping", { body: { webhook_id: client.webhookId } });
  console.log("Waiting for webhook deliveries (Ctrl-C to stop)");
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
