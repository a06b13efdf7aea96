import { createReadStream } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getHtmlDocument } from "@scalar/core/libs/html-rendering";
import type { FastifyInstance } from "fastify";

// Scalar's browser bundle ships in its Fastify plugin's package, beside the plugin's entry. It
// is streamed from disk when asked for, rather than held as a 3.5 MB string by every API
// process (what registering the plugin itself does) for a page few requests open.
const BUNDLE = path.join(
  path.dirname(fileURLToPath(import.meta.resolve("@scalar/fastify-api-reference"))),
  "js",
  "standalone.js",
);

const hidden = { schema: { hide: true }, config: { access: "public" as const } };

/** The interactive API reference at `/docs`, reading the served OpenAPI document. */
export function registerApiReference(app: FastifyInstance, apiBase: string): void {
  const page = getHtmlDocument({
    url: `${apiBase}/openapi.json`,
    cdn: `${apiBase}/docs/js/scalar.js`,
    pageTitle: "Workspace API reference",
    _integration: "fastify",
  });
  app.get("/docs/", hidden, async (_request, reply) =>
    reply.type("text/html; charset=utf-8").send(page),
  );
  app.get("/docs/js/scalar.js", hidden, async (_request, reply) =>
    reply
      .type("application/javascript; charset=utf-8")
      .header("Cache-Control", "public, max-age=86400")
      .send(createReadStream(BUNDLE)),
  );
}
