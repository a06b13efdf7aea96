import type { FastifyDynamicSwaggerOptions } from "@fastify/swagger";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import type { Config } from "../config.js";
import { scopeDescriptions } from "../core/scopes.js";

export const API_PREFIX = "/api/v1";
const API_PREFIX_PATTERN = /^\/api\/v1(?=\/|$)/;

const DESCRIPTION = `The workspace REST API: read the organisation's projects, specifications, components,
milestones, tasks, documentation pages, document library and meetings; write pages, document
links, tasks and meeting minutes and notes.

Every request is scoped to the organisation of its bearer token. Success is
\`{"ok":true,"data":...}\`; failure is \`{"ok":false,"error":"<code>","message":"<text>"}\`.
A \`429 rate_limited\` and a \`503 unavailable\` (the database cannot be reached, or answered too
slowly) both carry \`Retry-After\` (seconds): wait that long and send the same request again.

Addons get their tokens from the OAuth 2.0 token endpoint (\`POST /oauth/token\`, form-encoded,
described by the metadata at \`/.well-known/oauth-authorization-server\`). It answers errors as
\`{"error":"<code>","error_description":"<text>"}\`: \`invalid_request\`, \`invalid_grant\` and
\`unsupported_grant_type\` with 400, \`invalid_client\` with 401, and \`invalid_client\` with
\`429\` and \`Retry-After\` once too many client authentications failed from the caller's address
(wait, then try again), and \`temporarily_unavailable\` with \`503\` and \`Retry-After\` while the
database cannot serve.

`;

/** The OpenAPI 3.1 document is generated from the same zod schemas the routes validate with. */
export function openApiOptions(
  config: Config,
  /** Sections the domain contributes (the change-event catalogue), appended to the description. */
  moreDescription: string,
): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Workspace API",
        version: "1.0.0",
        description: `${DESCRIPTION}\n${moreDescription}`,
        license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      },
      servers: [{ url: `${config.publicUrl}${API_PREFIX}` }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: "http",
            scheme: "bearer",
            description:
              "A `svc_live_` token minted by an organisation admin, or issued through OAuth.",
          },
          oauth2: {
            type: "oauth2",
            description:
              "Tokens issued to addons through the authorization-code flow (PKCE for public clients).",
            flows: {
              authorizationCode: {
                authorizationUrl: `${config.publicUrl}/oauth/authorize`,
                tokenUrl: `${config.publicUrl}${API_PREFIX}/oauth/token`,
                scopes: { ...scopeDescriptions },
              },
            },
          },
        },
      },
    },
    // Paths are relative to the server URL, which already ends in /api/v1 (spec: "All paths
    // are relative to {base_url}"), whatever path PUBLIC_URL itself has.
    stripBasePath: false,
    transform: (input) => {
      const transformed = jsonSchemaTransform(input);
      return { ...transformed, url: transformed.url.replace(API_PREFIX_PATTERN, "") };
    },
    transformObject: (input) => pruneUnusedSchemas(jsonSchemaTransformObject(input)),
  };
}

type Document = ReturnType<typeof jsonSchemaTransformObject>;

function referencedSchemaNames(value: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) referencedSchemaNames(item, found);
  } else if (value !== null && typeof value === "object") {
    for (const [key, child] of Object.entries(value)) {
      if (
        key === "$ref" &&
        typeof child === "string" &&
        child.startsWith("#/components/schemas/")
      ) {
        found.add(child.slice("#/components/schemas/".length));
      } else {
        referencedSchemaNames(child, found);
      }
    }
  }
  return found;
}

/**
 * The zod provider emits an input and an output variant of every named schema; only the
 * ones operations actually reference (directly or through other schemas) stay in the document.
 */
function pruneUnusedSchemas(document: Document): Document {
  const components = (document as { components?: { schemas?: Record<string, unknown> } })
    .components;
  const schemas = components?.schemas;
  if (components === undefined || schemas === undefined) return document;
  const { components: _omitted, ...rest } = document as Record<string, unknown>;
  const kept = referencedSchemaNames(rest, new Set());
  let size = -1;
  while (kept.size !== size) {
    size = kept.size;
    for (const name of [...kept]) referencedSchemaNames(schemas[name], kept);
  }
  components.schemas = Object.fromEntries(
    Object.entries(schemas).filter(([name]) => kept.has(name)),
  );
  return document;
}
