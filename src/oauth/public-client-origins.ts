import { and, eq, inArray, or, sql } from "drizzle-orm";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { oauthClients, oauthRedirectUris } from "../db/schema/index.js";

type Verdict = { allowed: boolean; decidedAt: number };

const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443" };

/**
 * How a redirect URI of `origin` may begin: the origin as browsers send it (scheme and host
 * lower-cased, default port left out), or with its default port written out.
 */
function spellingsOf(origin: string): string[] {
  const url = new URL(origin);
  const defaultPort = url.port === "" ? DEFAULT_PORTS[url.protocol] : undefined;
  return defaultPort === undefined ? [origin] : [origin, `${origin}:${defaultPort}`];
}

/** Only an origin as a browser sends it is looked up; anything else is no client's. */
function isCanonicalOrigin(origin: string): boolean {
  return URL.canParse(origin) && new URL(origin).origin === origin;
}

/**
 * Whether an origin is that of a redirect URI of some public client: the pages that run the
 * OAuth flow in the browser and so must read the token endpoint's answer. Each origin is looked
 * up on its own and its verdict kept for a while, in a cache of bounded size.
 */
export class PublicClientOrigins {
  /** Verdicts, and lookups under way, by origin; the least recently asked first. */
  private readonly verdicts = new Map<string, Promise<Verdict>>();

  constructor(
    private readonly db: Db,
    private readonly settings: Config["corsOrigins"],
  ) {}

  /** Whether a page of `origin` belongs to a registered public client. */
  readonly allows = async (origin: string): Promise<boolean> => {
    if (!isCanonicalOrigin(origin)) return false;
    const cached = this.verdicts.get(origin);
    if (cached !== undefined) {
      const verdict = await cached;
      if (this.isFresh(verdict)) {
        this.remember(origin, cached);
        return verdict.allowed;
      }
      // Another caller may have started the next lookup while this one waited.
      if (this.verdicts.get(origin) !== cached) return this.allows(origin);
    }
    const lookup = this.lookUp(origin);
    this.remember(origin, lookup);
    // A failed lookup is not a verdict: the next request asks the database again.
    lookup.catch(() => {
      if (this.verdicts.get(origin) === lookup) this.verdicts.delete(origin);
    });
    return (await lookup).allowed;
  };

  private isFresh(verdict: Verdict): boolean {
    const maxAge = verdict.allowed ? this.settings.knownMaxAgeMs : this.settings.unknownMaxAgeMs;
    return performance.now() - verdict.decidedAt < maxAge;
  }

  private remember(origin: string, verdict: Promise<Verdict>): void {
    this.verdicts.delete(origin);
    this.verdicts.set(origin, verdict);
    for (const oldest of this.verdicts.keys()) {
      if (this.verdicts.size <= this.settings.maxEntries) break;
      this.verdicts.delete(oldest);
    }
  }

  /** One query for this origin alone; it reads no other client's redirect URIs. */
  private async lookUp(origin: string): Promise<Verdict> {
    const decidedAt = performance.now();
    const uri = sql`lower(${oauthRedirectUris.uri})`;
    const spellings = spellingsOf(origin);
    const prefixes = spellings.flatMap((spelling) => [`${spelling}/`, `${spelling}?`]);
    const rows = await this.db
      .select({ one: sql<number>`1` })
      .from(oauthRedirectUris)
      .innerJoin(oauthClients, eq(oauthClients.id, oauthRedirectUris.clientId))
      .where(
        and(
          eq(oauthClients.isPublic, true),
          or(
            inArray(uri, spellings),
            ...prefixes.map((prefix) => sql`starts_with(${uri}, ${prefix})`),
          ),
        ),
      )
      .limit(1);
    return { allowed: rows.length > 0, decidedAt };
  }
}
