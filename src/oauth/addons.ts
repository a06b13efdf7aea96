import { randomBytes, timingSafeEqual } from "node:crypto";
import { and, asc, desc, eq, inArray, type SQL } from "drizzle-orm";
import { InvalidRequest } from "../core/errors.js";
import { isStorableText } from "../core/values.js";
import type { Db } from "../db/client.js";
import { assertRowReturned } from "../db/returned-row.js";
import { oauthClients, oauthRedirectUris, organizations } from "../db/schema/index.js";
import { type AuditContext, recordAudit } from "../modules/audit/service.js";
import { hashSecret } from "../modules/tokens/service.js";

const CLIENT_ID_PREFIX = "svcc_";
const CLIENT_SECRET_PREFIX = "svcs_";

const MAX_NAME_LENGTH = 100;
const MAX_REDIRECT_URIS = 10;
const MAX_REDIRECT_URI_LENGTH = 2000;
// RFC 8252 §7.3: native apps and local development receive the code on the loopback interface.
const PLAIN_HTTP_HOSTS = new Set(["localhost", "127.0.0.1"]);

/**
 * A redirect URI as registered: absolute, no fragment (RFC 6749 §3.1.2), HTTPS except on
 * localhost and 127.0.0.1, no credentials. It is kept exactly as written, because requests
 * are compared with it character for character.
 */
export function checkRedirectUri(input: string): string {
  const uri = input.trim();
  const refuse = (reason: string) =>
    new InvalidRequest(`redirect URI ${uri || "(empty)"} ${reason}`);
  if (uri.length > MAX_REDIRECT_URI_LENGTH)
    throw refuse(`is longer than ${MAX_REDIRECT_URI_LENGTH} characters`);
  if (!URL.canParse(uri)) throw refuse("must be an absolute URL");
  if (uri.includes("#")) throw refuse("must not contain a fragment (#)");
  if (/\s/.test(uri)) throw refuse("must not contain spaces");
  const url = new URL(uri);
  if (url.username !== "" || url.password !== "") throw refuse("must not contain credentials");
  if (url.protocol === "https:" && url.hostname !== "") return uri;
  if (url.protocol === "http:" && PLAIN_HTTP_HOSTS.has(url.hostname)) return uri;
  throw refuse("must use https (plain http only for localhost and 127.0.0.1)");
}

function checkAddonName(input: string): string {
  const name = input.trim();
  if (name.length === 0) throw new InvalidRequest("name: the addon needs a name");
  if (name.length > MAX_NAME_LENGTH) {
    throw new InvalidRequest(`name: at most ${MAX_NAME_LENGTH} characters`);
  }
  if (!isStorableText(name))
    throw new InvalidRequest("name: contains characters that cannot be stored");
  return name;
}

function checkRedirectUris(inputs: readonly string[]): string[] {
  const uris = [...new Set(inputs.map(checkRedirectUri))];
  if (uris.length === 0) throw new InvalidRequest("redirect URI: register at least one");
  if (uris.length > MAX_REDIRECT_URIS) {
    throw new InvalidRequest(`redirect URI: at most ${MAX_REDIRECT_URIS} per addon`);
  }
  return uris;
}

function newClientSecret(): string {
  return `${CLIENT_SECRET_PREFIX}${randomBytes(32).toString("base64url")}`;
}

export type NewAddon = {
  /** The developer's organisation. */
  organizationId: string;
  name: string;
  redirectUris: readonly string[];
  /** A public client (PKCE, no secret), e.g. an app running on the user's device. */
  isPublic: boolean;
  createdBy?: string | null;
};

export type RegisteredAddon = {
  id: string;
  clientId: string;
  /** Shown this once; null for a public client. */
  clientSecret: string | null;
};

/** Registers an addon; only a hash of its secret is stored. */
export async function registerAddon(
  db: Db,
  audit: AuditContext,
  input: NewAddon,
): Promise<RegisteredAddon> {
  const name = checkAddonName(input.name);
  const redirectUris = checkRedirectUris(input.redirectUris);
  const clientId = `${CLIENT_ID_PREFIX}${randomBytes(16).toString("base64url")}`;
  const clientSecret = input.isPublic ? null : newClientSecret();
  return db.transaction(async (tx) => {
    const [client] = await tx
      .insert(oauthClients)
      .values({
        organizationId: input.organizationId,
        clientId,
        name,
        secretHash: clientSecret === null ? null : hashSecret(clientSecret),
        isPublic: input.isPublic,
        createdBy: input.createdBy ?? null,
      })
      .returning({ id: oauthClients.id });
    assertRowReturned(client, "oauth client insert");
    await tx
      .insert(oauthRedirectUris)
      .values(redirectUris.map((uri) => ({ clientId: client.id, uri })));
    await recordAudit(tx, audit, {
      organizationId: input.organizationId,
      action: "oauth_client.created",
      target: { type: "oauth_client", id: client.id, label: name },
      detail: { clientId, public: input.isPublic, redirectUris },
    });
    return { id: client.id, clientId, clientSecret };
  });
}

export type Addon = {
  /** The client record's UUID (what `GET /me` shows as `pluginId`). */
  id: string;
  clientId: string;
  name: string;
  isPublic: boolean;
  secretHash: string | null;
  developer: { id: string; name: string };
  redirectUris: string[];
};

/** The addon behind a `svcc_` client id, with its developer and registered redirect URIs. */
export async function findAddonByClientId(db: Db, clientId: string): Promise<Addon | null> {
  const [client] = await db
    .select({
      id: oauthClients.id,
      clientId: oauthClients.clientId,
      name: oauthClients.name,
      isPublic: oauthClients.isPublic,
      secretHash: oauthClients.secretHash,
      developer: { id: organizations.id, name: organizations.name },
    })
    .from(oauthClients)
    .innerJoin(organizations, eq(organizations.id, oauthClients.organizationId))
    .where(eq(oauthClients.clientId, clientId))
    .limit(1);
  if (client === undefined) return null;
  const uris = await db
    .select({ uri: oauthRedirectUris.uri })
    .from(oauthRedirectUris)
    .where(eq(oauthRedirectUris.clientId, client.id))
    .orderBy(asc(oauthRedirectUris.uri));
  return { ...client, redirectUris: uris.map((row) => row.uri) };
}

/** Constant-time comparison of a presented secret with the stored hash. */
export function clientSecretMatches(client: Addon, secret: string): boolean {
  if (client.secretHash === null) return false;
  const presented = Buffer.from(hashSecret(secret));
  const stored = Buffer.from(client.secretHash);
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

export type DevelopedAddon = {
  id: string;
  clientId: string;
  name: string;
  isPublic: boolean;
  createdAt: Date;
  redirectUris: string[];
};

/** The addons an organisation develops, newest first. */
export async function listAddonsDevelopedBy(
  db: Db,
  organizationId: string,
): Promise<DevelopedAddon[]> {
  return selectDevelopedAddons(db, eq(oauthClients.organizationId, organizationId));
}

/** One addon the organisation develops, by its record id; null when it has no such addon. */
export async function findAddonDevelopedBy(
  db: Db,
  organizationId: string,
  id: string,
): Promise<DevelopedAddon | null> {
  const [addon] = await selectDevelopedAddons(db, selectedBy({ id, organizationId }));
  return addon ?? null;
}

async function selectDevelopedAddons(db: Db, where: SQL | undefined): Promise<DevelopedAddon[]> {
  const clients = await db
    .select({
      id: oauthClients.id,
      clientId: oauthClients.clientId,
      name: oauthClients.name,
      isPublic: oauthClients.isPublic,
      createdAt: oauthClients.createdAt,
    })
    .from(oauthClients)
    .where(where)
    .orderBy(desc(oauthClients.createdAt), asc(oauthClients.name));
  if (clients.length === 0) return [];
  const uris = await db
    .select({ clientId: oauthRedirectUris.clientId, uri: oauthRedirectUris.uri })
    .from(oauthRedirectUris)
    .where(
      inArray(
        oauthRedirectUris.clientId,
        clients.map((client) => client.id),
      ),
    )
    .orderBy(asc(oauthRedirectUris.uri));
  return clients.map((client) => ({
    ...client,
    redirectUris: uris.filter((row) => row.clientId === client.id).map((row) => row.uri),
  }));
}

/**
 * Which addon a change is for: by its public client id (`svc`), or by its record id within the
 * developer organisation (the admin area), so another organisation's addon names nothing.
 */
export type AddonSelector = { clientId: string } | { id: string; organizationId: string };

function selectedBy(selector: AddonSelector): SQL | undefined {
  return "clientId" in selector
    ? eq(oauthClients.clientId, selector.clientId)
    : and(
        eq(oauthClients.id, selector.id),
        eq(oauthClients.organizationId, selector.organizationId),
      );
}

export type AddonChanges = { name?: string; redirectUris?: readonly string[] };

/**
 * Renames an addon and/or replaces its redirect URIs, checked as at registration; a code
 * already issued keeps the redirect URI it was bound to. False when no such addon.
 */
export async function updateAddon(
  db: Db,
  selector: AddonSelector,
  changes: AddonChanges,
): Promise<boolean> {
  const name = changes.name === undefined ? undefined : checkAddonName(changes.name);
  const redirectUris =
    changes.redirectUris === undefined ? undefined : checkRedirectUris(changes.redirectUris);
  return db.transaction(async (tx) => {
    const [client] = await tx
      .select({ id: oauthClients.id })
      .from(oauthClients)
      .where(selectedBy(selector))
      .for("update");
    if (client === undefined) return false;
    if (name !== undefined) {
      await tx.update(oauthClients).set({ name }).where(eq(oauthClients.id, client.id));
    }
    if (redirectUris !== undefined) {
      await tx.delete(oauthRedirectUris).where(eq(oauthRedirectUris.clientId, client.id));
      await tx
        .insert(oauthRedirectUris)
        .values(redirectUris.map((uri) => ({ clientId: client.id, uri })));
    }
    return true;
  });
}

/**
 * Replaces a confidential addon's secret: the old one is refused from this commit on, since the
 * token endpoint compares with the stored hash on every request. The new secret is returned
 * this once; null when no such addon. A public client has no secret to replace.
 */
export async function rotateClientSecret(
  db: Db,
  audit: AuditContext,
  selector: AddonSelector,
): Promise<{ clientId: string; clientSecret: string } | null> {
  const clientSecret = newClientSecret();
  return db.transaction(async (tx) => {
    const [client] = await tx
      .select({
        id: oauthClients.id,
        clientId: oauthClients.clientId,
        name: oauthClients.name,
        organizationId: oauthClients.organizationId,
        isPublic: oauthClients.isPublic,
      })
      .from(oauthClients)
      .where(selectedBy(selector))
      .for("update");
    if (client === undefined) return null;
    if (client.isPublic) {
      throw new InvalidRequest(
        "a public client has no secret to replace: it proves itself with PKCE",
      );
    }
    await tx
      .update(oauthClients)
      .set({ secretHash: hashSecret(clientSecret) })
      .where(eq(oauthClients.id, client.id));
    await recordAudit(tx, audit, {
      organizationId: client.organizationId,
      action: "oauth_client.secret_replaced",
      target: { type: "oauth_client", id: client.id, label: client.name },
      detail: { clientId: client.clientId },
    });
    return { clientId: client.clientId, clientSecret };
  });
}

/**
 * Deletes an addon with its redirect URIs, codes, grants and their tokens (foreign keys
 * cascade). The grants' and tokens' delete triggers notify `principals_changed`, so every
 * instance drops the tokens it cached. False when no such addon.
 */
export async function deleteAddon(db: Db, selector: AddonSelector): Promise<boolean> {
  const deleted = await db
    .delete(oauthClients)
    .where(selectedBy(selector))
    .returning({ id: oauthClients.id });
  return deleted.length > 0;
}
