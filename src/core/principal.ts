import type { Scope } from "./scopes.js";

/** Who a live bearer token speaks for: every API request is checked and scoped by it. */
export type Principal = {
  tokenId: string;
  organization: { id: string; slug: string; name: string };
  scopes: Scope[];
  /** The user writes are attributed to, or null when the creator left the organisation. */
  authorId: string | null;
  /** The addon's OAuth client record for OAuth-issued tokens. */
  pluginId: string | null;
};

/**
 * The organisation a write acts in, the member it is attributed to, and the W3C traceparent of
 * the request that writes (tracing on), kept with the change event it records.
 */
export type Actor = { organizationId: string; authorId: string; traceContext?: string | null };
