import type { BuildOptions } from "esbuild";

/**
 * How the CLI is bundled, for the build (scripts/bundle.ts) and for the tests' child processes
 * (test/support/cli-bundle.ts) alike.
 */
export const BUNDLE_OPTIONS: BuildOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: [
    "@electric-sql/pglite",
    "argon2",
    "msgpackr-extract",
    "@scalar/fastify-api-reference",
    "pino-pretty",
    // Piscina starts its threads from its own files, found beside its package.
    "piscina",
    // Read only when tracing is on (src/tracing/otel-tracer.ts), never parsed otherwise.
    "@opentelemetry/*",
    // Loaded only with METRICS_PORT: a process without it does not even parse it.
    "prom-client",
  ],
  // The bundled CommonJS packages call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  logLevel: "warning",
};
