import { createReadStream } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  getConfiguration,
  type HtmlRenderingConfiguration,
} from "@scalar/core/libs/html-rendering";
import type { FastifyInstance, FastifyReply } from "fastify";

// Scalar's browser bundle, beside its Fastify plugin's entry, is streamed from disk: the plugin
// would hold its megabytes in every API process for a page few requests open.
const BUNDLE = path.join(
  path.dirname(fileURLToPath(import.meta.resolve("@scalar/fastify-api-reference"))),
  "js",
  "standalone.js",
);

/**
 * Nothing on the page may leave this origin: the bundle, its configuration and the document
 * are ours, "try it" may only call this service, and no one may frame it. Scalar injects its
 * styles at run time, hence `'unsafe-inline'` for styles only; fonts are the browser's own.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/**
 * Scalar's defaults reach its hosted services: fonts from its font host, "try it" through its
 * request proxy for any server not on localhost, and hosted features (the AI agent, the
 * developer toolbar with "Share" and "Deploy", the link to its web client). All are off here.
 */
function referenceConfiguration(apiBase: string): Partial<HtmlRenderingConfiguration> {
  return getConfiguration({
    url: `${apiBase}/openapi.json`,
    // Empty means "send directly"; left unset, parts of the bundle (its web client layout, the
    // agent) fall back to the hosted proxy.
    proxyUrl: "",
    withDefaultFonts: false,
    hideClientButton: true,
    showDeveloperTools: "never",
    agent: { disabled: true },
    telemetry: false,
    documentDownloadType: "json",
    authentication: { preferredSecurityScheme: "bearerAuth" },
    _integration: "fastify",
  });
}

function pageHtml(apiBase: string): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Workspace API reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="${apiBase}/docs/js/scalar.js"></script>
    <script src="${apiBase}/docs/js/reference.js"></script>
  </body>
</html>
`;
}

const hidden = { schema: { hide: true }, config: { access: "public" as const } };

function withPageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    .header("X-Frame-Options", "DENY")
    .header("X-Content-Type-Options", "nosniff")
    .header("Referrer-Policy", "no-referrer");
}

/** The interactive API reference at `/docs`, reading the served OpenAPI document. */
export function registerApiReference(app: FastifyInstance, apiBase: string): void {
  const page = pageHtml(apiBase);
  // The configuration is a script file of ours rather than an inline one, so `script-src` stays 'self'.
  const mount = `Scalar.createApiReference("#app", ${JSON.stringify(referenceConfiguration(apiBase))});\n`;
  app.get("/docs/", hidden, async (_request, reply) =>
    withPageHeaders(reply).type("text/html; charset=utf-8").send(page),
  );
  app.get("/docs/js/reference.js", hidden, async (_request, reply) =>
    withPageHeaders(reply).type("application/javascript; charset=utf-8").send(mount),
  );
  app.get("/docs/js/scalar.js", hidden, async (_request, reply) =>
    withPageHeaders(reply)
      .type("application/javascript; charset=utf-8")
      .header("Cache-Control", "public, max-age=86400")
      .send(createReadStream(BUNDLE)),
  );
}
