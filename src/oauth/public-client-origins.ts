import { eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { oauthClients, oauthRedirectUris } from "../db/schema/index.js";

// A known origin is trusted this long; a client deleted meanwhile keeps CORS until then.
const KNOWN_ORIGINS_MAX_AGE_MS = 60_000;
// An unknown origin rereads the list at most this often, so a new client works within a
// second while a stream of invented origins costs one query a second.
const UNKNOWN_ORIGIN_REREAD_MS = 1000;

type Snapshot = { origins: ReadonlySet<string>; readAt: number };

function originOf(uri: string): string | null {
  return URL.canParse(uri) ? new URL(uri).origin : null;
}

/**
 * The origins of the redirect URIs of public clients: the pages that run the OAuth flow in
 * the browser and so must read the token endpoint's answer.
 */
export class PublicClientOrigins {
  private snapshot: Promise<Snapshot> | null = null;

  constructor(private readonly db: Db) {}

  /** Whether a page of `origin` belongs to a registered public client. */
  readonly allows = async (origin: string): Promise<boolean> => {
    const current = await this.read(KNOWN_ORIGINS_MAX_AGE_MS);
    if (current.origins.has(origin)) return true;
    return (await this.read(UNKNOWN_ORIGIN_REREAD_MS)).origins.has(origin);
  };

  /** The current snapshot if younger than `maxAgeMs`, else one read now (one read at a time). */
  private async read(maxAgeMs: number): Promise<Snapshot> {
    const pending = this.snapshot;
    if (pending !== null) {
      const snapshot = await pending.catch(() => null);
      if (snapshot !== null && performance.now() - snapshot.readAt < maxAgeMs) return snapshot;
      if (this.snapshot !== pending) return this.read(maxAgeMs);
    }
    const next = this.load();
    this.snapshot = next;
    return next;
  }

  private async load(): Promise<Snapshot> {
    const readAt = performance.now();
    const rows = await this.db
      .select({ uri: oauthRedirectUris.uri })
      .from(oauthRedirectUris)
      .innerJoin(oauthClients, eq(oauthClients.id, oauthRedirectUris.clientId))
      .where(eq(oauthClients.isPublic, true));
    const origins = new Set<string>();
    for (const { uri } of rows) {
      const origin = originOf(uri);
      if (origin !== null) origins.add(origin);
    }
    return { origins, readAt };
  }
}
