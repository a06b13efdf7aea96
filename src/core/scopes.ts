/** The 13 scopes of the spec, each with the plain words the consent page and docs show. */
export const scopeDescriptions = {
  "projects:read": "Read projects",
  "specs:read": "Read specifications and their published versions",
  "components:read": "Read components and their versions",
  "milestones:read": "Read milestones",
  "tasks:read": "Read tasks",
  "pages:read": "Read documentation pages",
  "documents:read": "Read the document library",
  "meetings:read": "Read meetings, minutes and transcripts",
  "pages:write": "Create and edit documentation pages",
  "documents:write": "Add and edit links in the document library",
  "tasks:write": "Create and update tasks",
  "meetings:write": "Write meeting minutes and notes",
  "webhooks:manage": "Send test deliveries to webhooks",
} as const;

export type Scope = keyof typeof scopeDescriptions;
export const allScopes = Object.keys(scopeDescriptions) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.hasOwn(scopeDescriptions, value);
}

/**
 * Parses a comma- or space-separated scope list; `all` stands for every scope.
 * Returns the unknown entries separately so callers can name them in their refusal.
 */
export function parseScopeList(input: string): { scopes: Scope[]; unknown: string[] } {
  const entries = input.split(/[\s,]+/).filter((entry) => entry !== "");
  if (entries.length === 1 && entries[0] === "all") return { scopes: [...allScopes], unknown: [] };
  const unknown = entries.filter((entry) => !isScope(entry));
  const scopes = allScopes.filter((scope) => entries.includes(scope));
  return { scopes, unknown };
}
